import assert from 'node:assert/strict';
import { test } from 'node:test';
import { translator } from '../i18n/texts.ts';
import { barChart, legend, niceCeiling } from './chart.ts';

test('the axis tops at a round number at or above the largest count, whole at its middle', () => {
  assert.deepEqual([0, 1, 2, 3, 5, 7, 10, 11, 45, 101].map(niceCeiling), [1, 1, 2, 4, 6, 8, 10, 20, 60, 200]);
});

test('the chart draws one bar per non-zero count, names each in a tooltip, and describes itself', () => {
  const t = translator('en');
  const series = {
    bucketSeconds: 300,
    buckets: [
      { start: '2026-01-31T09:00:00.000Z', accepted: 4, sent: 3, deferred: 0, failed: 1 },
      { start: '2026-01-31T09:05:00.000Z', accepted: 0, sent: 0, deferred: 2, failed: 0 },
    ],
  };
  const svg = barChart({ id: 'hour', t, series, labelEvery: 1 }).toString();
  assert.equal(svg.match(/<rect /g)?.length, 4);
  assert.match(svg, /<title>09:05 UTC · Deferred: 2<\/title>/);
  assert.match(svg, /role="img" aria-labelledby="hour-desc"/);
  assert.match(svg, /every 5 minutes, from 09:00 to 09:10 UTC/);
  assert.doesNotMatch(svg, /style=/, 'colours come from the stylesheet, as the CSP requires');
  assert.match(legend(t, series).toString(), /Accepted: <strong data-count="accepted">4<\/strong>/);
});
