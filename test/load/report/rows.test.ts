import assert from 'node:assert/strict';
import { test } from 'node:test';
import { buildRows, renderMarkdown, renderTable } from './rows.ts';
import { judge, targets } from './targets.ts';

test('a target says pass, or MISS with how far off the figure is', () => {
  assert.deepEqual(judge(targets.ingestPerSecond, 3_200), { verdict: 'pass', gap: '' });
  assert.deepEqual(judge(targets.ingestPerSecond, 1_500), { verdict: 'MISS', gap: '-50%' });
  assert.deepEqual(judge(targets.p99At1000Ms, 50), { verdict: 'MISS', gap: '+100%' });
  assert.deepEqual(judge(targets.replayP99Ms, undefined), { verdict: '', gap: '' });
});

const latency = { p50: 4, p90: 8, p99: 30, max: 40, mean: 5 };
const paced = (rate: number) => ({
  rate,
  load: { sent: rate, completed: rate, statuses: { '202': rate }, errors: 0, timeouts: 0, durationS: 1, latencyMs: latency, offeredRate: rate, replayed: 0, maxScheduleLagMs: 1 },
  acceptedPerSecond: rate,
  queuedToSent: { messages: rate, p50Ms: 100, p99Ms: 400 },
  settled: { total: rate, sent: rate, failed: 0, pending: 0, waitedS: 1 },
});

test('the ingest rows judge saturation against the ceiling and p99 at 1,000/s, and a skipped 1,000/s is a miss', () => {
  const rows = buildRows({
    connections: 64,
    ceiling: { load: { sent: 1, completed: 1, statuses: {}, errors: 0, timeouts: 0, durationS: 1, latencyMs: latency, answeredPerSecond: 10_000, cutOff: 0 }, perSecond: 10_000 },
    ingest: {
      paced: [paced(500)],
      skippedRates: [1_000, 2_000],
      saturation: { load: { sent: 1, completed: 1, statuses: {}, errors: 0, timeouts: 0, durationS: 1, latencyMs: latency, answeredPerSecond: 2_500, cutOff: 0 }, acceptedPerSecond: 2_500, cpuPerMessage: {}, queuedToSent: { messages: 1, p50Ms: 1, p99Ms: 1 }, settled: { total: 1, sent: 1, failed: 0, pending: 0, waitedS: 0 } },
    },
  });
  const byFigure = new Map(rows.map((row) => [row.figure, row]));
  assert.equal(byFigure.get('ingest at saturation, 64 connections (accepted/s)')?.result, 'MISS (-17%)');
  assert.equal(byFigure.get('ingest / HTTP ceiling')?.ratio, '0.25');
  assert.equal(byFigure.get('ingest / HTTP ceiling')?.result, 'pass');
  assert.equal(byFigure.get('ingest latency at 1,000/s offered: p50 / p99')?.result, 'MISS (rate not sustained)');
  assert.equal(byFigure.get('ingest latency at 2,000/s offered: p50 / p99')?.result, '');
  assert.match(renderTable(rows), /^figure\s+measured/);
  assert.match(renderMarkdown(rows), /^\| figure \| measured/);
});
