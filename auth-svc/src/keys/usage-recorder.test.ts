import assert from 'node:assert/strict';
import { test } from 'node:test';
import { UsageTracker } from './usage-recorder.ts';

test('a key used many times within a minute is written once', () => {
  const clock = { now: 0 };
  const tracker = new UsageTracker({ minIntervalMs: 60_000, now: () => clock.now });
  for (let i = 0; i < 1_000; i += 1) {
    tracker.touch(7);
    clock.now += 50;
  }
  assert.deepEqual(tracker.take(), [{ keyId: 7, usedAt: new Date(0) }]);
  assert.deepEqual(tracker.take(), []);
});

test('a key used again after the interval is written again, and each key counts separately', () => {
  const clock = { now: 0 };
  const tracker = new UsageTracker({ minIntervalMs: 60_000, now: () => clock.now });
  tracker.touch(1);
  tracker.touch(2);
  assert.equal(tracker.take().length, 2);
  clock.now = 59_999;
  tracker.touch(1);
  assert.deepEqual(tracker.take(), []);
  clock.now = 60_000;
  tracker.touch(1);
  tracker.touch(2);
  assert.deepEqual(tracker.take(), [
    { keyId: 1, usedAt: new Date(60_000) },
    { keyId: 2, usedAt: new Date(60_000) },
  ]);
});

test('uses noted between two flushes wait for the next one', () => {
  const clock = { now: 0 };
  const tracker = new UsageTracker({ minIntervalMs: 60_000, now: () => clock.now });
  tracker.touch(1);
  clock.now = 5_000;
  tracker.touch(3);
  assert.deepEqual(tracker.take(), [
    { keyId: 1, usedAt: new Date(0) },
    { keyId: 3, usedAt: new Date(5_000) },
  ]);
});
