import assert from 'node:assert/strict';
import { test } from 'node:test';
import { count5xx, countOf, countOther, type LoadResult, summarize } from './load-result.ts';

test('percentiles are nearest-rank over the samples', () => {
  const samples = Array.from({ length: 100 }, (_, index) => index + 1);
  const summary = summarize(samples.reverse());
  assert.equal(summary.p50, 50);
  assert.equal(summary.p90, 90);
  assert.equal(summary.p99, 99);
  assert.equal(summary.max, 100);
  assert.equal(summary.mean, 50.5);
});

test('no samples summarise to zeros rather than NaN', () => {
  assert.deepEqual(summarize([]), { p50: 0, p90: 0, p99: 0, max: 0, mean: 0 });
});

test('statuses are counted as expected, other and 5xx apart', () => {
  const result: LoadResult = {
    sent: 10,
    completed: 10,
    statuses: { '202': 6, '409': 1, '429': 1, '503': 2 },
    errors: 0,
    timeouts: 0,
    durationS: 1,
    latencyMs: summarize([1]),
  };
  assert.equal(countOf(result, 202), 6);
  assert.equal(countOther(result, 202), 2);
  assert.equal(count5xx(result), 2);
});
