import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { BatchIngestResult } from '../scenarios/batch-ingest.ts';
import type { CeilingResult } from '../scenarios/ceiling.ts';
import type { DeliveryResult } from '../scenarios/delivery.ts';
import { type EndToEndResult, halfSustainedRate } from '../scenarios/end-to-end.ts';
import type { StatsReadResult } from '../scenarios/stats-reads.ts';
import type { StatusReadResult } from '../scenarios/status-reads.ts';
import type { TemplateUpdateResult } from '../scenarios/template-updates.ts';
import { type TracingRun, tracingTotals } from '../scenarios/tracing-cost.ts';
import { backlogCpuPerEvent, cpuPerEvent, type WebhookAcceptRun, type WebhookBacklogRun, type WebhookRun, webhookTotals } from '../scenarios/webhook-cost.ts';
import { buildRows, renderMarkdown, renderTable } from './rows.ts';
import { judge, targets } from './targets.ts';

test('a target says pass, or MISS with how far off the figure is', () => {
  assert.deepEqual(judge(targets.ingestPerSecond, 3_200), { verdict: 'pass', gap: '' });
  assert.deepEqual(judge(targets.ingestPerSecond, 1_500), { verdict: 'MISS', gap: '-50%' });
  assert.deepEqual(judge(targets.acceptP99AtHalfSustainedMs, 50), { verdict: 'MISS', gap: '+100%' });
  assert.deepEqual(judge(targets.replayP99Ms, undefined), { verdict: '', gap: '' });
});

const latency = { p50: 4, p90: 8, p99: 30, max: 40, mean: 5 };
const saturation = (acceptedPerSecond: number) => ({
  load: { sent: 1, completed: 1, statuses: {}, errors: 0, timeouts: 0, durationS: 1, latencyMs: latency, answeredPerSecond: acceptedPerSecond, cutOff: 0 },
  acceptedPerSecond,
  cpuPerMessage: {},
  queuedToSent: { messages: 1, p50Ms: 1, p99Ms: 1 },
  settled: { total: 1, sent: 1, failed: 0, pending: 0, waitedS: 0 },
});

test('the ingest rows judge saturation against its target and against the ceiling', () => {
  const rows = buildRows({
    connections: 64,
    ceiling: {
      load: { sent: 1, completed: 1, statuses: {}, errors: 0, timeouts: 0, durationS: 1, latencyMs: latency, answeredPerSecond: 10_000, cutOff: 0 },
      perSecond: 10_000,
      cpuPerRequest: {},
    },
    ingest: { saturation: saturation(2_500) },
  });
  const byFigure = new Map(rows.map((row) => [row.figure, row]));
  assert.equal(byFigure.get('ingest at saturation, 64 connections (accepted/s)')?.result, 'MISS (-17%)');
  assert.equal(byFigure.get('ingest / HTTP ceiling')?.ratio, '0.25');
  assert.equal(byFigure.get('ingest / HTTP ceiling')?.result, 'pass');
  assert.match(renderTable(rows), /^figure\s+measured/);
  assert.match(renderMarkdown(rows), /^\| figure \| measured/);
});

const endToEnd = (options: { p99Ms: number; queuedToSentP99Ms: number; timeouts?: number }): EndToEndResult => ({
  sustainedPerSecond: 420,
  acceptedWhileDeliveringPerSecond: 450,
  drainPerSecond: 420,
  rate: halfSustainedRate(420),
  load: {
    sent: 840,
    completed: 840,
    statuses: { '202': 840 },
    errors: 0,
    timeouts: options.timeouts ?? 0,
    durationS: 4,
    latencyMs: { ...latency, p99: options.p99Ms },
    offeredRate: 210,
    replayed: 0,
    maxScheduleLagMs: 1,
  },
  acceptedPerSecond: 208,
  queuedToSent: { messages: 840, p50Ms: 180, p99Ms: options.queuedToSentP99Ms },
  settled: { total: 840, sent: 840, failed: 0, pending: 0, waitedS: 1 },
});

/**
 * A drain of 2,000 messages at 420/s, beside raw nodemailer's 800/s into the same sink; the drain's processes cost
 * `drainSystemMs` per mail, raw nodemailer's 1.4 ms, the sink 0.5 ms of each (machine totals and other work are not
 * the system's).
 */
const deliveryRun = (notifyPerSecond = 420, drainSystemMs = 3.5): DeliveryResult => ({
  messages: 2_000,
  preload: saturation(900).load,
  preloadAcceptedPerSecond: 900,
  preloadCpuPerMessage: {},
  drainCpuPerMessage: {
    'mailer-svc': drainSystemMs - 1.2,
    'smtp-sink': 0.5,
    'postgres (this run)': 0.3,
    'nats-server': 0.2,
    'dispatch-svc': 0.2,
    'other (not this run)': 0.2,
    'machine total': drainSystemMs + 0.2,
  },
  raw: { messages: 2_000, spanS: 2.5, perSecond: 800, failed: 0 },
  rawCpuPerMessage: { 'bench (load generator)': 0.9, 'smtp-sink': 0.5, 'other (not this run)': 0.1, 'machine total': 1.5 },
  notify: { messages: 2_000, spanS: 4.8, perSecond: notifyPerSecond },
  settled: { total: 2_000, sent: 2_000, failed: 0, pending: 0, waitedS: 5 },
});

test('the delivery rows judge the drain against 1,500/s and against raw nodemailer of the same run (0.8), in mails per second and in CPU per mail without the sink', () => {
  const judged = (notifyPerSecond: number, drainSystemMs?: number) =>
    buildRows({ connections: 64, delivery: deliveryRun(notifyPerSecond, drainSystemMs) })
      .filter((entry) => entry.figure.startsWith('delivery') && !entry.figure.includes('updates'))
      .map((entry) => [entry.figure, entry.measured, entry.baseline, entry.ratio, entry.target, entry.result]);
  // 420 / 800 = 0.525, 34 % short of 0.8; without the sink's 0.5 ms, raw's 0.9 ms against the drain's 3.0 ms = 0.30.
  assert.deepEqual(judged(420), [
    ['delivery drain, 2,000 messages (sent/s)', '420/s', '', '', '>= 1,500/s', 'MISS (-72%)'],
    ['delivery / raw pooled nodemailer', '0.53', 'raw 800/s', '0.53', '>= 0.80', 'MISS (-34%)'],
    // Judged without the sink: the relay's 0.50 ms of each is not Notify's nor nodemailer's.
    [
      'delivery drain, DKIM-signed: CPU per mail, system',
      '3.50 ms (3.00 without the sink)',
      'raw pooled nodemailer, signed 1.40 ms (0.90 without the sink)',
      '0.30',
      '>= 0.80',
      'MISS (-62%)',
    ],
  ]);
  // At most 1.25 times raw's CPU per mail without the sink (1.125 ms) passes: 1.6 - 0.5 ms does, 1.7 - 0.5 ms does not.
  assert.deepEqual(
    judged(1_600, 1.6).map((entry) => entry[5]),
    ['pass', 'pass', 'pass'],
  );
  assert.deepEqual(
    judged(1_600, 1.7).map((entry) => entry[5]),
    ['pass', 'pass', 'MISS (-6%)'],
  );
});

test('an unsigned drain is put beside the signed one, and accept and delivery together are judged signed against 2.5 ms and unsigned against 1.6 ms, the sink excluded', () => {
  const delivery: DeliveryResult = {
    ...deliveryRun(420, 3.5),
    preloadCpuPerMessage: { gateway: 0.3, 'dispatch-svc': 0.2, 'postgres (this run)': 0.1, 'other (not this run)': 0.2, 'machine total': 0.8 },
    unsigned: {
      messages: 1_000,
      perSecond: 610,
      cpuPerMessage: { 'mailer-svc': 0.6, 'smtp-sink': 0.5, 'nats-server': 0.2, 'dispatch-svc': 0.2, 'machine total': 1.6 },
    },
  };
  const rows = buildRows({ connections: 64, delivery })
    .filter((entry) => entry.figure.includes('unsigned') || entry.figure.startsWith('accept and delivery'))
    .map((entry) => [entry.figure, entry.measured, entry.baseline, entry.ratio, entry.target, entry.result]);
  assert.deepEqual(rows, [
    [
      'delivery drain, unsigned, 1,000 messages: CPU per mail, system',
      '1.50 ms (1.00 without the sink)',
      'signed 3.50 ms (3.00 without the sink), 610/s',
      '0.33',
      '',
      '',
    ],
    [
      'accept and delivery together, DKIM-signed: CPU per message, system without the sink',
      '3.60 ms',
      'accept 0.60 + delivery 3.00 ms',
      '',
      '<= 2.50 ms',
      'MISS (+44%)',
    ],
    ['accept and delivery together, unsigned: CPU per message, system without the sink', '1.60 ms', 'accept 0.60 + delivery 1.00 ms', '', '<= 1.60 ms', 'pass'],
  ]);
});

test('the end-to-end rows judge the sustained rate against raw nodemailer, and accept latency and queued->sent at half of it', () => {
  const passing = buildRows({ connections: 64, endToEnd: endToEnd({ p99Ms: 20, queuedToSentP99Ms: 900 }) });
  assert.deepEqual(
    passing.map((entry) => [entry.figure, entry.measured, entry.baseline, entry.target, entry.result]),
    [
      ['end to end sustained, one mailer (accepted = delivered/s)', '420/s', 'lower of ingest while delivering 450/s and drain 420/s', '', ''],
      ['accept latency at 210/s (half the sustained rate): p50 / p99', '4.0 / 20 ms', 'achieved 208/s', '<= 25 ms', 'pass'],
      ['queued->sent at 210/s (half the sustained rate): p50 / p99', '180 / 900 ms', '840 messages', '<= 1 s', 'pass'],
    ],
  );
  // With the raw baseline of the same run: 420 / 800 = 0.525, 12.5 % short of 0.60.
  const missing = buildRows({ connections: 64, endToEnd: endToEnd({ p99Ms: 40, queuedToSentP99Ms: 1_500, timeouts: 3 }), delivery: deliveryRun() });
  const byFigure = new Map(missing.map((row) => [row.figure, row]));
  assert.equal(byFigure.get('end to end / raw pooled nodemailer')?.ratio, '0.53');
  assert.equal(byFigure.get('end to end / raw pooled nodemailer')?.baseline, 'raw 800/s');
  assert.equal(byFigure.get('end to end / raw pooled nodemailer')?.result, 'MISS (-12%)');
  assert.equal(byFigure.get('accept latency at 210/s (half the sustained rate): p50 / p99')?.result, 'MISS (+60%)');
  assert.equal(byFigure.get('accept latency at 210/s (half the sustained rate): p50 / p99')?.baseline, 'achieved 208/s, 3 unanswered');
  assert.equal(byFigure.get('queued->sent at 210/s (half the sustained rate): p50 / p99')?.result, 'MISS (+50%)');
});

const tracingRun = (mode: 'on' | 'off', cpuPerMessage: Record<string, number>, spans: number): TracingRun => ({
  mode,
  load: {
    sent: 400,
    completed: 400,
    statuses: { '202': 400 },
    errors: 0,
    timeouts: 0,
    durationS: 2,
    latencyMs: latency,
    offeredRate: 200,
    replayed: 0,
    maxScheduleLagMs: 1,
  },
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
  const off = tracingRun(
    'off',
    {
      gateway: 1,
      'auth-svc': 0.1,
      'dispatch-svc': 0.5,
      'mailer-svc': 1.4,
      'postgres (this run)': 0.5,
      'nats-server': 0.5,
      'other (not this run)': 3,
      'machine total': 7,
    },
    0,
  );
  const on = tracingRun(
    'on',
    {
      gateway: 1.5,
      'auth-svc': 0.1,
      'dispatch-svc': 1,
      'mailer-svc': 1.9,
      'postgres (this run)': 0.5,
      'nats-server': 0.5,
      'otlp-receiver': 2,
      'other (not this run)': 0,
      'machine total': 7.5,
    },
    12_000,
  );
  assert.deepEqual(tracingTotals(on.cpuPerMessage), { services: 4.5, system: 5.5, sink: 0, receiver: 2 });
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

test("the paced ceiling's rows put the bare Koa server's and the system's CPU per request at the paced rate beside saturation's, and the gateway's at that rate beside the server's", () => {
  const pacedLoad = {
    sent: 1_000,
    completed: 1_000,
    statuses: { '202': 1_000 },
    errors: 0,
    timeouts: 0,
    durationS: 5,
    latencyMs: latency,
    offeredRate: 200,
    replayed: 0,
    maxScheduleLagMs: 1,
  };
  const ceiling: CeilingResult = {
    load: { sent: 1, completed: 1, statuses: {}, errors: 0, timeouts: 0, durationS: 1, latencyMs: latency, answeredPerSecond: 20_000, cutOff: 0 },
    perSecond: 20_000,
    cpuPerRequest: { 'bare Koa': 0.04, 'bench (load generator)': 0.04, 'other (not this run)': 0.5, 'machine total': 0.58 },
    paced: { rate: 200, load: pacedLoad, cpuPerRequest: { 'bare Koa': 0.3, 'bench (load generator)': 0.5, 'other (not this run)': 1, 'machine total': 1.8 } },
  };
  const off = tracingRun('off', { gateway: 1.5, 'dispatch-svc': 1, 'machine total': 2.5 }, 0);
  const paced = (figures: Parameters<typeof buildRows>[0]): string[][] =>
    buildRows(figures)
      .filter((entry) => entry.figure.includes('paced') || entry.figure.includes('/ bare Koa server'))
      .map((entry) => [entry.figure, entry.measured, entry.baseline, entry.ratio]);
  assert.deepEqual(paced({ connections: 64, ceiling, tracing: { rate: 200, off } }), [
    ['HTTP ceiling at 200/s, paced: CPU per request, bare Koa server', '0.30 ms', 'at saturation 0.04 ms', '7.50'],
    ['HTTP ceiling at 200/s, paced: CPU per request, system', '0.80 ms', 'at saturation 0.08 ms', '10.00'],
    ['CPU per message at 200/s, no OTLP endpoint: gateway / bare Koa server at 200/s', '5.00', 'gateway 1.50 ms, bare Koa 0.30 ms', '5.00'],
  ]);
  // The tracing runs at another rate (half of a slow machine's saturation): no gateway row to compare.
  assert.equal(paced({ connections: 64, ceiling, tracing: { rate: 100, off } }).length, 2);
});

const webhookRun = (mode: 'none' | 'endpoint', cpuPerMessage: Record<string, number>, events: number): WebhookRun => ({
  mode,
  load: {
    sent: 400,
    completed: 400,
    statuses: { '202': 400 },
    errors: 0,
    timeouts: 0,
    durationS: 2,
    latencyMs: latency,
    offeredRate: 200,
    replayed: 0,
    maxScheduleLagMs: 1,
  },
  messages: 400,
  delivered: { total: 400, sent: 400, failed: 0, pending: 0, waitedS: 1 },
  windowS: 3,
  cpuPerMessage,
  events,
});

test('the webhook rows put CPU per message with an endpoint beside none, the extra CPU per event at the rate and from backlogs, the events, the burst rate, its deliveries put back and its updates of webhook_deliveries', () => {
  const none = webhookRun(
    'none',
    {
      gateway: 1,
      'auth-svc': 0.1,
      'dispatch-svc': 0.5,
      'mailer-svc': 1.4,
      'webhook-svc': 0,
      'postgres (this run)': 0.5,
      'other (not this run)': 3,
      'machine total': 7,
    },
    0,
  );
  const endpoint = webhookRun(
    'endpoint',
    {
      gateway: 1,
      'auth-svc': 0.1,
      'dispatch-svc': 0.7,
      'mailer-svc': 1.4,
      'webhook-svc': 0.8,
      'postgres (this run)': 0.7,
      'nats-server': 0.1,
      'webhook-receiver': 0.3,
      'other (not this run)': 0,
      'machine total': 8,
    },
    400,
  );
  // The receiver and the machine's other work are not Notify's.
  assert.deepEqual(webhookTotals(endpoint.cpuPerMessage), { services: 4, system: 4.8, sink: 0, receiver: 0.3 });
  // 400 messages: (4.0 - 3.0) ms x 400 over 400 events; the system also pays PostgreSQL and NATS.
  assert.equal(cpuPerEvent(none, endpoint, 'services'), 1);
  assert.ok(Math.abs((cpuPerEvent(none, endpoint, 'system') ?? 0) - 1.3) < 1e-9);
  // Half the messages with an event each: the same extra CPU over half the events is twice as much per event.
  assert.equal(cpuPerEvent(none, { ...endpoint, events: 200 }, 'services'), 2);
  assert.equal(cpuPerEvent(none, { ...endpoint, events: 0 }, 'services'), undefined);

  // Backlogs of 500 messages: dispatch-svc, PostgreSQL and NATS 2.0 - 1.6 ms per message over 500 events made is
  // 0.4 ms (the mailer's and the gateway's differences are noise, left out); the burst sent 400 events once webhook-svc
  // was ready at 0.9 ms of the system each (the receiver left out).
  const backlog = (mode: 'none' | 'endpoint', cpu: Record<string, number>, events: number): WebhookBacklogRun => ({
    mode,
    load: endpoint.load,
    messages: 500,
    events,
    cpuPerMessage: cpu,
  });
  const backlogNone = backlog(
    'none',
    { gateway: 0.5, 'dispatch-svc': 0.5, 'mailer-svc': 1.3, 'postgres (this run)': 0.8, 'nats-server': 0.3, 'machine total': 3.4 },
    0,
  );
  const backlogEndpoint = backlog(
    'endpoint',
    { gateway: 0.4, 'dispatch-svc': 0.7, 'mailer-svc': 1, 'postgres (this run)': 1, 'nats-server': 0.3, 'machine total': 3.4 },
    500,
  );
  const burst = {
    messages: 500,
    events: 500,
    load: endpoint.load,
    eventsAfterReady: 400,
    cpuPerEvent: { 'webhook-svc': 0.5, 'postgres (this run)': 0.3, 'nats-server': 0.1, 'webhook-receiver': 0.2, 'machine total': 1.2 },
    fromStartS: 2.4,
    spanS: 1.996,
    perSecond: 250,
    // Two updates per event (claim, record), three in four in place, on a table of two indexes.
    deliveryWrites: { updates: 800, hotUpdates: 600, indexes: 2 },
    // Four requests open at a time: the other 496 waited for one, and 3 of them were put back.
    endpointBusy: { parked: 493, putBack: 3 },
  };
  const cost = backlogCpuPerEvent(backlogNone, backlogEndpoint, burst, 'system');
  assert.deepEqual(cost && [cost.made, cost.sent, cost.total].map((ms) => ms.toFixed(6)), ['0.400000', '0.900000', '1.300000']);
  assert.equal(backlogCpuPerEvent(backlogNone, { ...backlogEndpoint, events: 0 }, burst, 'system'), undefined);
  const rows = buildRows({ connections: 64, webhooks: { rate: 200, none, endpoint, backlogNone, backlogEndpoint, burst } });
  assert.deepEqual(
    rows.map((entry) => [entry.figure, entry.measured, entry.baseline, entry.ratio]),
    [
      ['CPU per message at 200/s, no webhook endpoint: services', '3.00 ms', '400 messages', ''],
      ['CPU per message at 200/s, one webhook endpoint (every event type): services', '4.00 ms', 'no endpoint 3.00 ms', '1.33'],
      ['CPU per message at 200/s, no webhook endpoint: system', '3.50 ms', '400 messages', ''],
      ['CPU per message at 200/s, one webhook endpoint (every event type): system', '4.80 ms', 'no endpoint 3.50 ms', '1.37'],
      ['extra CPU per webhook event at 200/s: services', '1.00 ms', '(with - without) / 400 events', ''],
      ['extra CPU per webhook event at 200/s: system', '1.30 ms', '(with - without) / 400 events', ''],
      ['CPU per webhook event made and relayed (dispatch-svc), from a backlog: services', '0.20 ms', '(with - without) / 500 events, 500 messages each', ''],
      ['CPU per webhook event sent, one webhook-svc draining a backlog: services', '0.50 ms', '400 events once it was ready', ''],
      ['CPU per webhook event, from a backlog (made, relayed and sent): services', '0.70 ms', '', ''],
      [
        'CPU per webhook event made and relayed (dispatch-svc, PostgreSQL, NATS), from a backlog: system',
        '0.40 ms',
        '(with - without) / 500 events, 500 messages each',
        '',
      ],
      ['CPU per webhook event sent, one webhook-svc draining a backlog: system', '0.90 ms', '400 events once it was ready', ''],
      ['CPU per webhook event, from a backlog (made, relayed and sent): system', '1.30 ms', '', ''],
      ['webhook events delivered (204)', '400', '400 messages sent, receiver 0.30 ms/message', ''],
      ['webhook events/s, one webhook-svc, one endpoint', '250/s', '500 events in 2.0 s; 2.4 s from its restart to the last', ''],
      ['webhook burst: deliveries put back to the stream, endpoint at its share', '3', '493 waited in webhook-svc', ''],
      ['webhook burst: HOT share of updates of webhook_deliveries', '75%', '800 updates, 2 indexes', ''],
      // 200 updates not HOT, each writing to both indexes, over 800 updates.
      ['webhook burst: index entries written per update of webhook_deliveries (at most)', '0.50', '', ''],
    ],
  );
  assert.deepEqual(
    buildRows({ connections: 64, webhooks: { rate: 200, burst: { ...burst, deliveryWrites: { updates: 0, hotUpdates: 0, indexes: 2 } } } }).filter((entry) =>
      /updates? of webhook_deliveries/.test(entry.figure),
    ),
    [],
    'no update seen, no share',
  );
  // The fixed rate's difference is shown, not judged; the backlogs' sum is.
  assert.equal(rows.find((entry) => entry.figure === 'extra CPU per webhook event at 200/s: system')?.result, '');
  assert.equal(rows.find((entry) => entry.figure === 'CPU per webhook event, from a backlog (made, relayed and sent): system')?.result, 'MISS (+160%)');
  assert.equal(rows.find((entry) => entry.figure === 'CPU per webhook event, from a backlog (made, relayed and sent): services')?.result, '');
  // A bench stopped before the endpoint run reports the first half alone, with no figure per event.
  assert.deepEqual(
    buildRows({ connections: 64, webhooks: { rate: 200, none } }).map((entry) => entry.figure),
    ['CPU per message at 200/s, no webhook endpoint: services', 'CPU per message at 200/s, no webhook endpoint: system'],
  );
});

const acceptRun = (mode: 'none' | 'endpoint', cpuPerMessage: Record<string, number>): WebhookAcceptRun => ({
  mode,
  load: { sent: 500, completed: 500, statuses: { '202': 500 }, errors: 0, timeouts: 0, durationS: 1, latencyMs: latency, answeredPerSecond: 500, cutOff: 0 },
  messages: 500,
  cpuPerMessage,
});

test('the webhook accept-path rows put CPU per accepted send with an endpoint beside none, the system figure judged against 0.5 ms', () => {
  const acceptNone = acceptRun('none', { gateway: 0.2, 'dispatch-svc': 0.1, 'postgres (this run)': 0.1, 'other (not this run)': 2, 'machine total': 2.4 });
  const acceptEndpoint = acceptRun('endpoint', {
    gateway: 0.2,
    'dispatch-svc': 0.2,
    'postgres (this run)': 0.2,
    'webhook-receiver': 0.1,
    'other (not this run)': 0,
    'machine total': 0.7,
  });
  const rows = buildRows({ connections: 64, webhooks: { rate: 200, acceptNone, acceptEndpoint } });
  assert.deepEqual(
    rows.map((entry) => [entry.figure, entry.measured, entry.baseline, entry.ratio, entry.target, entry.result]),
    [
      ['CPU per accepted send, mailers stopped, no webhook endpoint: services', '0.30 ms', '500 sends, one tenant', '', '', ''],
      ['CPU per accepted send, mailers stopped, one webhook endpoint (every event type): services', '0.40 ms', 'no endpoint 0.30 ms', '1.33', '', ''],
      ['CPU per accepted send, mailers stopped, no webhook endpoint: system', '0.40 ms', '500 sends, one tenant', '', '<= 0.50 ms', 'pass'],
      [
        'CPU per accepted send, mailers stopped, one webhook endpoint (every event type): system',
        '0.60 ms',
        'no endpoint 0.40 ms',
        '1.50',
        '<= 0.50 ms',
        'MISS (+20%)',
      ],
    ],
  );
});

test('the status-read rows report latency and CPU per read at the fixed rate, and CPU per read at saturation judged against 0.5 ms', () => {
  const statusReads: StatusReadResult = {
    rate: 200,
    messages: 300,
    load: {
      sent: 600,
      completed: 600,
      statuses: { '200': 600 },
      errors: 0,
      timeouts: 0,
      durationS: 3,
      latencyMs: latency,
      offeredRate: 200,
      replayed: 0,
      maxScheduleLagMs: 1,
    },
    reads: 600,
    cpuPerRead: { gateway: 1.15, 'auth-svc': 0, 'dispatch-svc': 0.6, 'postgres (this run)': 0.25, 'other (not this run)': 1, 'machine total': 3 },
    saturated: {
      load: {
        sent: 3_000,
        completed: 3_000,
        statuses: { '200': 3_000 },
        errors: 0,
        timeouts: 0,
        durationS: 1.2,
        latencyMs: latency,
        answeredPerSecond: 2_500,
        cutOff: 0,
      },
      reads: 3_000,
      cpuPerRead: { gateway: 0.15, 'auth-svc': 0, 'dispatch-svc': 0.1, 'postgres (this run)': 0.05, 'other (not this run)': 1, 'machine total': 1.3 },
    },
  };
  assert.deepEqual(
    buildRows({ connections: 64, statusReads }).map((entry) => [entry.figure, entry.measured, entry.baseline, entry.target, entry.result]),
    [
      ['status read (GET /api/v1/messages/{id}/) at 200/s: p50 / p99', '4.0 / 30 ms', '600 reads of 300 messages', '', ''],
      ['CPU per status read at 200/s: services', '1.75 ms', '', '', ''],
      ['CPU per status read at 200/s: system', '2.00 ms', '', '', ''],
      ['status reads at saturation, 64 connections', '2,500/s', '3,000 reads', '', ''],
      ['CPU per status read at saturation: services', '0.25 ms', '', '', ''],
      ['CPU per status read at saturation: system', '0.30 ms', '', '<= 0.50 ms', 'pass'],
    ],
  );
  const costly = { ...statusReads, saturated: { ...statusReads.saturated, cpuPerRead: { gateway: 0.5, 'dispatch-svc': 0.25, 'machine total': 0.75 } } };
  assert.equal(buildRows({ connections: 64, statusReads: costly }).at(-1)?.result, 'MISS (+50%)');
});

test('the batch rows put accepted messages/s and CPU per message in batches of 100 beside the single sends of the same run', () => {
  const batch: BatchIngestResult = {
    items: 100,
    load: { sent: 20, completed: 20, statuses: { '200': 20 }, errors: 0, timeouts: 0, durationS: 0.5, latencyMs: latency, answeredPerSecond: 40, cutOff: 0 },
    accepted: 2_000,
    acceptedPerSecond: 4_000,
    cpuPerMessage: { gateway: 0.05, 'auth-svc': 0, 'dispatch-svc': 0.05, 'postgres (this run)': 0.1, 'other (not this run)': 1, 'machine total': 1.2 },
  };
  const delivery: DeliveryResult = {
    messages: 2_000,
    preload: { ...saturation(1_000).load, statuses: { '202': 1_000 } },
    preloadAcceptedPerSecond: 1_000,
    preloadCpuPerMessage: { gateway: 0.3, 'auth-svc': 0.05, 'dispatch-svc': 0.15, 'postgres (this run)': 0.3, 'machine total': 0.8 },
    drainCpuPerMessage: {},
    raw: { messages: 2_000, spanS: 2.5, perSecond: 800, failed: 0 },
    rawCpuPerMessage: {},
    notify: { messages: 2_000, spanS: 4.8, perSecond: 420 },
    settled: { total: 2_000, sent: 2_000, failed: 0, pending: 0, waitedS: 5 },
  };
  const rows = buildRows({ connections: 64, batch, delivery }).filter((entry) => entry.figure.includes('batches'));
  assert.deepEqual(
    rows.map((entry) => [entry.figure, entry.measured, entry.baseline, entry.ratio]),
    [
      ['ingest in batches of 100, mailers stopped (accepted messages/s)', '4,000/s', 'single sends 1,000/s', '4.00'],
      ['CPU per message accepted in batches of 100, mailers stopped: services', '0.10 ms', 'single sends 0.50 ms', '0.20'],
      ['CPU per message accepted in batches of 100, mailers stopped: system', '0.20 ms', 'single sends 0.80 ms', '0.25'],
    ],
  );
  // The single sends' own CPU per send is the accept path's row, its system figure judged against 0.5 ms.
  const acceptPath = buildRows({ connections: 64, delivery }).filter((entry) => entry.figure.includes('the backlog'));
  assert.deepEqual(
    acceptPath.map((entry) => [entry.figure, entry.measured, entry.baseline, entry.target, entry.result]),
    [
      ['CPU per accepted send, mailers stopped, the backlog: services', '0.50 ms', '1,000 sends, the tenants in turn', '', ''],
      ['CPU per accepted send, mailers stopped, the backlog: system', '0.80 ms', '1,000 sends, the tenants in turn', '<= 0.50 ms', 'MISS (+60%)'],
    ],
  );
  // Beside the bare Koa ceiling of the same run, the system figure is judged as requests' worth of its CPU: at most 5.
  const ceiling: CeilingResult = {
    load: { sent: 1, completed: 1, statuses: {}, errors: 0, timeouts: 0, durationS: 1, latencyMs: latency, answeredPerSecond: 10_000, cutOff: 0 },
    perSecond: 10_000,
    cpuPerRequest: { 'bare Koa': 0.09, 'bench (load generator)': 0.06, 'other (not this run)': 0.5, 'machine total': 0.65 },
  };
  const judged = (sendCpu: Record<string, number>): string[] => {
    const ratioRow = buildRows({ connections: 64, ceiling, delivery: { ...delivery, preloadCpuPerMessage: sendCpu } }).find((entry) =>
      entry.figure.includes('bare Koa CPU per request'),
    );
    return ratioRow ? [ratioRow.measured, ratioRow.baseline, ratioRow.target, ratioRow.result] : [];
  };
  assert.deepEqual(judged(delivery.preloadCpuPerMessage), ['5.33', 'bare Koa 0.15 ms per request', '<= 5.00', 'MISS (+7%)']);
  assert.deepEqual(judged({ ...delivery.preloadCpuPerMessage, 'postgres (this run)': 0.2 }), ['4.67', 'bare Koa 0.15 ms per request', '<= 5.00', 'pass']);
  // Without the single sends' run (the bench stopped before it), the figures stand alone.
  assert.deepEqual(
    buildRows({ connections: 64, batch }).map((entry) => entry.baseline),
    ['2,000 messages', '', ''],
  );
});

test("the drain's updates of messages read as their HOT share and the index entries they wrote, per update", () => {
  const messageWrites = { updates: 4_000, hotUpdates: 1_000, indexes: 9 };
  const rows = buildRows({ connections: 64, messageWrites }).filter((entry) => entry.figure.startsWith('delivery drain:'));
  assert.deepEqual(
    rows.map((entry) => [entry.figure, entry.measured, entry.baseline]),
    [
      ['delivery drain: HOT share of updates of messages', '25%', '4,000 updates, 9 indexes'],
      // 3,000 updates not HOT, each writing to 9 indexes, over 4,000 updates.
      ['delivery drain: index entries written per update of messages (at most)', '6.75', ''],
    ],
  );
  // No update seen (the counters not flushed yet, or no drain): no figure rather than a division by zero.
  assert.deepEqual(
    buildRows({ connections: 64, messageWrites: { updates: 0, hotUpdates: 0, indexes: 9 } }).filter((entry) => entry.figure.startsWith('delivery drain:')),
    [],
  );
});

test('the replay rows judge replays with the mailers idle against 5 ms and replays while a backlog drains against 15 ms', () => {
  const replay = (p99: number) => ({
    sent: 500,
    completed: 500,
    statuses: { '202': 500 },
    errors: 0,
    timeouts: 0,
    durationS: 5,
    latencyMs: { ...latency, p99 },
    offeredRate: 100,
    replayed: 500,
    maxScheduleLagMs: 1,
  });
  const delivery = (p99: number): DeliveryResult => ({ ...deliveryRun(), replayWhileDraining: { keys: 300, rate: 100, replay: replay(p99), newMessages: 0 } });
  const idle = { keys: 300, rate: 300, create: { ...replay(30), replayed: 0 }, replay: replay(4), newMessages: 0 };
  const replayRows = (p99: number) => buildRows({ connections: 64, replay: idle, delivery: delivery(p99) }).filter((entry) => entry.figure.includes('replay'));
  assert.deepEqual(
    replayRows(12).map((entry) => [entry.figure, entry.measured, entry.baseline, entry.target, entry.result]),
    [
      ['idempotent replay at 300/s: p50 / p99', '4.0 / 4.0 ms', '300 keys', '<= 5 ms', 'pass'],
      ['idempotent replay at 100/s while one mailer drains a backlog: p50 / p99', '4.0 / 12 ms', '300 keys', '<= 15 ms', 'pass'],
    ],
  );
  assert.equal(replayRows(30).at(-1)?.result, 'MISS (+100%)');
  // A drain without replays (the replay scenario did not run) has no such row.
  const { replayWhileDraining: _, ...withoutReplays } = delivery(12);
  assert.equal(buildRows({ connections: 64, delivery: withoutReplays }).filter((entry) => entry.figure.includes('replay')).length, 0);
});

test('a paced run is followed by how long its processes waited for a CPU per request, in all and its four largest groups', () => {
  const replay = {
    sent: 500,
    completed: 500,
    statuses: { '202': 500 },
    errors: 0,
    timeouts: 0,
    durationS: 5,
    latencyMs: { ...latency, p99: 30 },
    offeredRate: 100,
    replayed: 500,
    maxScheduleLagMs: 1,
  };
  const waits = { gateway: 0.5, 'dispatch-svc': 0.9, 'auth-svc': 0.01, 'postgres (this run)': 0.2, 'nats-server': 0.06, 'smtp-sink': 0.07, 'in all': 1.74 };
  const idle = { keys: 300, rate: 300, create: { ...replay, replayed: 0 }, replay, newMessages: 0, runQueueWaitMs: waits };
  const rows = buildRows({
    connections: 64,
    replay: idle,
    endToEnd: { ...endToEnd({ p99Ms: 40, queuedToSentP99Ms: 900 }), runQueueWaitMs: { gateway: 0.3, 'in all': 0.3 } },
  });
  const waitRows = rows.filter((entry) => entry.figure.includes('waiting for a CPU'));
  assert.deepEqual(
    waitRows.map((entry) => [entry.figure, entry.measured, entry.baseline, entry.target, entry.result]),
    [
      ['accept latency at 210/s: waiting for a CPU per send, all processes', '0.30 ms', 'gateway 0.30', '', ''],
      [
        'idempotent replay at 300/s: waiting for a CPU per replay, all processes',
        '1.74 ms',
        'dispatch-svc 0.90, gateway 0.50, postgres (this run) 0.20, smtp-sink 0.07',
        '',
        '',
      ],
    ],
  );
  // Each follows the latency row it explains.
  const figures = rows.map((entry) => entry.figure);
  assert.equal(figures.indexOf(waitRows[1]?.figure ?? ''), figures.indexOf('idempotent replay at 300/s: p50 / p99') + 1);
  // Where the kernel keeps no scheduler statistics there is no figure, and no row.
  const { runQueueWaitMs: _, ...withoutWaits } = idle;
  assert.equal(buildRows({ connections: 64, replay: withoutWaits }).filter((entry) => entry.figure.includes('waiting for a CPU')).length, 0);
});

test('the management rows report calls per second at saturation, latency and CPU per call: stats reads and template updates', () => {
  const saturated = {
    load: {
      sent: 1_000,
      completed: 1_000,
      statuses: { '200': 1_000 },
      errors: 0,
      timeouts: 0,
      durationS: 2,
      latencyMs: latency,
      answeredPerSecond: 500,
      cutOff: 0,
    },
    calls: 1_000,
    cpuPerCall: { gateway: 0.5, 'dispatch-svc': 0.75, 'postgres (this run)': 2, 'other (not this run)': 1, 'machine total': 4.25 },
  };
  const statsReads: StatsReadResult = { ...saturated, hourRows: 8_760 };
  const templateUpdates: TemplateUpdateResult = { ...saturated, templates: 64 };
  assert.deepEqual(
    buildRows({ connections: 64, statsReads, templateUpdates }).map((entry) => [entry.figure, entry.measured, entry.baseline]),
    [
      ['stats reads (GET /api/v1/stats/, a year by day) at saturation, 64 connections', '500/s', '1,000 reads of 8,760 hour rows each'],
      ['stats read at saturation: p50 / p99', '4.0 / 30 ms', ''],
      ['CPU per stats read at saturation: services', '1.25 ms', ''],
      ['CPU per stats read at saturation: system', '3.25 ms', ''],
      ['template updates (PUT /api/v1/templates/{slug}/, a new version each) at saturation, 64 connections', '500/s', '1,000 updates of 64 templates'],
      ['template update at saturation: p50 / p99', '4.0 / 30 ms', ''],
      ['CPU per template update at saturation: services', '1.25 ms', ''],
      ['CPU per template update at saturation: system', '3.25 ms', ''],
    ],
  );
});
