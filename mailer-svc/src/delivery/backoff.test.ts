import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { retryDelayMs } from './backoff.ts';

const policy = { baseMs: 60_000, maxMs: 3_600_000 };
const top = (): number => 0.999_999_999;
const bottom = (): number => 0;

describe('retry backoff', () => {
  it('doubles the ceiling with every attempt from the base', () => {
    assert.equal(retryDelayMs(1, policy, top), 59_999);
    assert.equal(retryDelayMs(2, policy, top), 119_999);
    assert.equal(retryDelayMs(4, policy, top), 479_999);
  });

  it('never exceeds the maximum, even for very late attempts', () => {
    assert.equal(retryDelayMs(7, policy, top), 3_599_999);
    assert.equal(retryDelayMs(5_000, policy, top), 3_599_999);
  });

  it('never retries sooner than half the ceiling, so retries at the cap are at least 30 minutes apart by default', () => {
    assert.equal(retryDelayMs(1, policy, bottom), 30_000);
    assert.equal(retryDelayMs(3, policy, bottom), 120_000);
    assert.equal(retryDelayMs(50, policy, bottom), 1_800_000);
  });

  it('spreads retries over the upper half of the window (equal jitter)', () => {
    assert.equal(
      retryDelayMs(3, policy, () => 0.5),
      180_000,
    );
    const samples = Array.from({ length: 200 }, () => retryDelayMs(3, policy));
    assert.ok(samples.every((delay) => delay >= 120_000 && delay < 240_000));
    assert.ok(new Set(samples).size > 100);
  });
});
