import assert from 'node:assert/strict';
import { test } from 'node:test';
import { contractSchedule, nextRetryDelay, parseSchedule } from './schedule.ts';

const schedule = parseSchedule(contractSchedule);
const now = Date.parse('2026-01-01T00:00:00Z');

test('the contract schedule is 5 s, 5 min, 30 min, 2 h, 5 h, 10 h, 10 h, then the delivery fails', () => {
  const middle = () => 0.5;
  assert.deepEqual(
    [1, 2, 3, 4, 5, 6, 7].map((attempts) => nextRetryDelay(schedule, attempts, {}, now, middle)),
    [5_000, 300_000, 1_800_000, 7_200_000, 18_000_000, 36_000_000, 36_000_000],
  );
  assert.equal(nextRetryDelay(schedule, 8, {}, now), undefined);
});

test('each delay has jitter of up to a tenth either way', () => {
  assert.equal(
    nextRetryDelay(schedule, 1, {}, now, () => 0),
    4_500,
  );
  assert.equal(
    nextRetryDelay(schedule, 1, {}, now, () => 1),
    5_500,
  );
});

test('Retry-After is honoured on 429, 502, 503 and 504 when later than the schedule', () => {
  for (const status of [429, 502, 503, 504])
    assert.equal(
      nextRetryDelay(schedule, 1, { status, retryAfter: '60' }, now, () => 0.5),
      60_000,
    );
  assert.equal(
    nextRetryDelay(schedule, 1, { status: 503, retryAfter: new Date(now + 90_000).toUTCString() }, now, () => 0.5),
    90_000,
  );
});

test('Retry-After is ignored when earlier than the schedule, or on another status', () => {
  assert.equal(
    nextRetryDelay(schedule, 2, { status: 503, retryAfter: '1' }, now, () => 0.5),
    300_000,
  );
  assert.equal(
    nextRetryDelay(schedule, 1, { status: 500, retryAfter: '60' }, now, () => 0.5),
    5_000,
  );
});

test('a schedule must list positive durations', () => {
  assert.deepEqual(parseSchedule('1s, 2m'), [1_000, 120_000]);
  assert.throws(() => parseSchedule('1s,,2s'));
});
