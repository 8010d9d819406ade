import assert from 'node:assert/strict';
import { test } from 'node:test';
import { tracingTotals, type TracingRun } from '../scenarios/tracing-cost.ts';
import { cpuPerEvent, webhookTotals, type WebhookRun } from '../scenarios/webhook-cost.ts';
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

const tracingRun = (mode: 'on' | 'off', cpuPerMessage: Record<string, number>, spans: number): TracingRun => ({
  mode,
  load: { sent: 400, completed: 400, statuses: { '202': 400 }, errors: 0, timeouts: 0, durationS: 2, latencyMs: latency, offeredRate: 200, replayed: 0, maxScheduleLagMs: 1 },
  messages: 400,
  delivered: { total: 400, sent: 400, failed: 0, pending: 0, waitedS: 1 },
  windowS: 5,
  cpuPerMessage,
  spans,
  spansByService: spans > 0 ? { gateway: spans / 2, 'dispatch-svc': spans / 2 } : ({} as Record<string, number>),
  exportRequests: spans > 0 ? 12 : 0,
  undecodable: 0,
});

test('the tracing rows put CPU per message with spans exported beside the default, for the services and the whole system, and count the spans', () => {
  const off = tracingRun('off', { gateway: 1, 'auth-svc': 0.1, 'dispatch-svc': 0.5, 'mailer-svc': 1.4, 'postgres (this run)': 0.5, 'nats-server': 0.5, 'other (not this run)': 3, 'machine total': 7 }, 0);
  const on = tracingRun('on', { gateway: 1.5, 'auth-svc': 0.1, 'dispatch-svc': 1, 'mailer-svc': 1.9, 'postgres (this run)': 0.5, 'nats-server': 0.5, 'otlp-receiver': 2, 'other (not this run)': 0, 'machine total': 7.5 }, 12_000);
  assert.deepEqual(tracingTotals(on.cpuPerMessage), { services: 4.5, system: 5.5, receiver: 2 });
  const rows = buildRows({ connections: 64, tracing: { rate: 200, off, on } });
  assert.deepEqual(
    rows.map((entry) => [entry.figure, entry.measured, entry.baseline, entry.ratio]),
    [
      ['CPU per message at 200/s, no OTLP endpoint (default): services', '3.00 ms', '400 messages', ''],
      ['CPU per message at 200/s, spans exported to OTLP: services', '4.50 ms', 'no endpoint 3.00 ms', '1.50'],
      ['CPU per message at 200/s, no OTLP endpoint (default): system', '4.00 ms', '400 messages', ''],
      ['CPU per message at 200/s, spans exported to OTLP: system', '5.50 ms', 'no endpoint 4.00 ms', '1.38'],
      ['spans received by the OTLP receiver', '12,000', '30.0 per message, 12 exports, receiver 2.00 ms/message', ''],
    ],
  );
  // A bench stopped after the traced run still reports it, without a ratio.
  const onlyOn = buildRows({ connections: 64, tracing: { rate: 200, on } });
  assert.deepEqual(
    onlyOn.map((entry) => [entry.figure, entry.ratio]),
    [
      ['CPU per message at 200/s, spans exported to OTLP: services', ''],
      ['CPU per message at 200/s, spans exported to OTLP: system', ''],
      ['spans received by the OTLP receiver', ''],
    ],
  );
});

const webhookRun = (mode: 'none' | 'endpoint', cpuPerMessage: Record<string, number>, events: number): WebhookRun => ({
  mode,
  load: { sent: 400, completed: 400, statuses: { '202': 400 }, errors: 0, timeouts: 0, durationS: 2, latencyMs: latency, offeredRate: 200, replayed: 0, maxScheduleLagMs: 1 },
  messages: 400,
  delivered: { total: 400, sent: 400, failed: 0, pending: 0, waitedS: 1 },
  windowS: 3,
  cpuPerMessage,
  events,
});

test('the webhook rows put CPU per message with an endpoint beside none, the extra CPU per event, the events and the burst rate', () => {
  const none = webhookRun('none', { gateway: 1, 'auth-svc': 0.1, 'dispatch-svc': 0.5, 'mailer-svc': 1.4, 'webhook-svc': 0, 'postgres (this run)': 0.5, 'other (not this run)': 3, 'machine total': 7 }, 0);
  const endpoint = webhookRun(
    'endpoint',
    { gateway: 1, 'auth-svc': 0.1, 'dispatch-svc': 0.7, 'mailer-svc': 1.4, 'webhook-svc': 0.8, 'postgres (this run)': 0.7, 'nats-server': 0.1, 'webhook-receiver': 0.3, 'other (not this run)': 0, 'machine total': 8 },
    400,
  );
  // The receiver and the machine's other work are not Notify's.
  assert.deepEqual(webhookTotals(endpoint.cpuPerMessage), { services: 4, system: 4.8, receiver: 0.3 });
  // 400 messages: (4.0 - 3.0) ms x 400 over 400 events; the system also pays PostgreSQL and NATS.
  assert.equal(cpuPerEvent(none, endpoint, 'services'), 1);
  assert.ok(Math.abs((cpuPerEvent(none, endpoint, 'system') ?? 0) - 1.3) < 1e-9);
  // Half the messages with an event each: the same extra CPU over half the events is twice as much per event.
  assert.equal(cpuPerEvent(none, { ...endpoint, events: 200 }, 'services'), 2);
  assert.equal(cpuPerEvent(none, { ...endpoint, events: 0 }, 'services'), undefined);

  const burst = { messages: 500, events: 500, load: endpoint.load, fromStartS: 2.4, spanS: 1.996, perSecond: 250 };
  const rows = buildRows({ connections: 64, webhooks: { rate: 200, none, endpoint, burst } });
  assert.deepEqual(
    rows.map((entry) => [entry.figure, entry.measured, entry.baseline, entry.ratio]),
    [
      ['CPU per message at 200/s, no webhook endpoint: services', '3.00 ms', '400 messages', ''],
      ['CPU per message at 200/s, one webhook endpoint: services', '4.00 ms', 'no endpoint 3.00 ms', '1.33'],
      ['CPU per message at 200/s, no webhook endpoint: system', '3.50 ms', '400 messages', ''],
      ['CPU per message at 200/s, one webhook endpoint: system', '4.80 ms', 'no endpoint 3.50 ms', '1.37'],
      ['extra CPU per webhook event: services', '1.00 ms', '(with - without) / 400 events', ''],
      ['extra CPU per webhook event: system', '1.30 ms', '(with - without) / 400 events', ''],
      ['webhook events delivered (204)', '400', '400 messages sent, receiver 0.30 ms/message', ''],
      ['webhook events/s, one webhook-svc, one endpoint', '250/s', '500 events in 2.0 s; 2.4 s from its restart to the last', ''],
    ],
  );
  // A bench stopped before the endpoint run reports the first half alone, with no figure per event.
  assert.deepEqual(
    buildRows({ connections: 64, webhooks: { rate: 200, none } }).map((entry) => entry.figure),
    ['CPU per message at 200/s, no webhook endpoint: services', 'CPU per message at 200/s, no webhook endpoint: system'],
  );
});
