// What a webhook per message costs. The same workload runs twice on the same system: sends at a fixed rate (the
// tracing-cost rate) from one tenant, accepted and delivered as they come (one mailer running), first with no webhook
// endpoint, then with one endpoint of that tenant's project, created through WebhookAdminService and subscribed to
// every event type, pointing at a receiver on 127.0.0.1 that answers 204 at once (in a process of its own, so its CPU
// is reported apart and left out of the totals). The CPU of every process is counted from the first request until
// every message of the run is delivered and, with the endpoint, the receiver has got an event per message sent;
// divided by the messages. The difference of the two, divided by the events delivered, is the CPU one webhook event
// costs. The accept path is measured apart, without and with the endpoint: sends from that tenant accepted at
// saturation with the mailers stopped, by the delivery backlog's closed-loop generator, CPU per accepted send (as the
// issue's accept-path target is judged).
// At 200/s each process pays its wake-ups alone, and the two runs' difference is often smaller than their noise; so an
// event's cost is judged from backlogs, the condition the accept path and status reads are judged in. With webhook-svc
// stopped, N messages are sent as fast as the gateway takes them and delivered by one mailer, first with no endpoint,
// then, right after, with the endpoint, until their events are relayed onto JetStream: the CPU per message of
// dispatch-svc, PostgreSQL and NATS in the second less the first's is what making and relaying an event costs. Then
// the burst: webhook-svc is started again, and from the moment it is ready until the receiver has every event, the CPU
// over the events sent in that time is what sending one costs (its start-up left out); the receiver also times the N
// events from the first to the last, the rate one sender (webhook-svc, one replica) achieves.
import { setTimeout as sleep } from 'node:timers/promises';
import { GrpcClient } from '@notify/platform';
import { dispatchProto } from '@notify/proto';
import { metricValue } from '../../harness/service-metrics.ts';
import { runBatch } from '../generators/batch-load.ts';
import { type ClosedLoopResult, runClosedLoop } from '../generators/closed-loop.ts';
import { countOf, type LoadResult } from '../generators/load-result.ts';
import { type PacedLoadResult, runPaced } from '../generators/paced-load.ts';
import { cpuPerMessage, sinkLabel } from '../system/cpu-usage.ts';
import type { BenchTenant } from '../system/system-under-test.ts';
import { type BenchWebhookReceiver, startBenchWebhookReceiver, type WebhookCounts } from '../system/webhook-receiver.ts';
import { type BenchContext, inWindow, requireAnswers } from './context.ts';
import { type DeliveryState, lastMessageId, quietMessageId, waitSettled } from './message-progress.ts';
import { pacedRequests, sendBody, sendHeaders, sendPath } from './send-requests.ts';
import { type TableWrites, tableUpdates, tableWritesSince } from './table-writes.ts';

export type WebhookMode = 'none' | 'endpoint';

export interface WebhookRun {
  readonly mode: WebhookMode;
  readonly load: PacedLoadResult;
  /** Messages the run created (the divisor), and their state when the window closed. */
  readonly messages: number;
  readonly delivered: DeliveryState & { waitedS: number };
  readonly windowS: number;
  /** CPU milliseconds per message, per process group (see system/cpu-usage.ts). */
  readonly cpuPerMessage: Record<string, number>;
  /** Webhook requests the receiver answered during the window (0 without an endpoint). */
  readonly events: number;
}

/** Sends from one tenant accepted with the mailers stopped: the accept path alone. */
export interface WebhookAcceptRun {
  readonly mode: WebhookMode;
  readonly load: ClosedLoopResult;
  /** Sends accepted (202): the divisor. */
  readonly messages: number;
  /** CPU milliseconds per accepted send, per process group (see system/cpu-usage.ts). */
  readonly cpuPerMessage: Record<string, number>;
}

/** N messages sent from one tenant as fast as accepted, one mailer delivering them, webhook-svc stopped. */
export interface WebhookBacklogRun {
  readonly mode: WebhookMode;
  readonly load: LoadResult;
  /** Messages the run created (the divisor). */
  readonly messages: number;
  /** Events relayed onto JetStream when the window closed (0 without an endpoint). */
  readonly events: number;
  /** CPU milliseconds per message, per process group, from the first request until every message was delivered and its event relayed. */
  readonly cpuPerMessage: Record<string, number>;
}

export interface WebhookBurst {
  /** Messages sent, and the webhook events the receiver got for them. */
  readonly messages: number;
  readonly events: number;
  readonly load: LoadResult;
  /** Events the receiver got from webhook-svc's readiness to the last (the divisor of cpuPerEvent). */
  readonly eventsAfterReady: number;
  /** CPU milliseconds per event sent, per process group, from webhook-svc's readiness to the last event. */
  readonly cpuPerEvent: Record<string, number>;
  /** From webhook-svc's start (ready) to the last event, and from the first event to the last (receiver clock). */
  readonly fromStartS: number;
  readonly spanS: number;
  /** (events - 1) / span: the steady rate one sender achieved. */
  readonly perSecond: number;
  /** The updates of webhook_deliveries from webhook-svc's readiness to the last event: its claims and records. */
  readonly deliveryWrites: TableWrites;
  /** Deliveries that found the endpoint at its share of requests: waited in webhook-svc, or put back to the stream. */
  readonly endpointBusy: { readonly parked: number; readonly putBack: number };
}

export interface WebhookCostResult {
  /** Requests per second offered in both runs. */
  readonly rate: number;
  none?: WebhookRun;
  endpoint?: WebhookRun;
  acceptNone?: WebhookAcceptRun;
  acceptEndpoint?: WebhookAcceptRun;
  backlogNone?: WebhookBacklogRun;
  backlogEndpoint?: WebhookBacklogRun;
  burst?: WebhookBurst;
}

/** Every event type an endpoint can subscribe to (docs/contract.md, "Webhooks"); only message.sent occurs here. */
const everyEventType = ['message.sent', 'message.deferred', 'message.failed', 'message.bounced', 'message.complained', 'message.unsubscribed'];

/** The five Notify services: where a webhook's cost lands (webhook-svc signs and sends it). */
export const webhookServiceLabels = ['gateway', 'auth-svc', 'dispatch-svc', 'mailer-svc', 'webhook-svc'] as const;
/** The receiver's CPU group: the integrator's work, not Notify's. */
export const webhookReceiverLabel = 'webhook-receiver';
const notAccounted = new Set(['machine total', 'other (not this run)', webhookReceiverLabel]);

/**
 * CPU milliseconds per message: `services`, the five services; `system`, every process of the run (services,
 * PostgreSQL, NATS, Redis, the SMTP sink and the load generator) without the receiver and the machine's other work;
 * `sink`, the SMTP sink's part of `system`; `receiver`, the receiver alone.
 */
export function webhookTotals(perMessage: Readonly<Record<string, number>>): { services: number; system: number; sink: number; receiver: number } {
  let services = 0;
  let system = 0;
  for (const [label, ms] of Object.entries(perMessage)) {
    if (notAccounted.has(label)) continue;
    system += ms;
    if ((webhookServiceLabels as readonly string[]).includes(label)) services += ms;
  }
  return { services, system, sink: perMessage[sinkLabel] ?? 0, receiver: perMessage[webhookReceiverLabel] ?? 0 };
}

/**
 * The extra CPU per webhook event, in milliseconds: (CPU of the run with the endpoint - CPU without) / events, each
 * run's CPU being its per-message figure times its messages. Undefined without events.
 */
export function cpuPerEvent(
  none: Pick<WebhookRun, 'messages' | 'cpuPerMessage'>,
  endpoint: Pick<WebhookRun, 'messages' | 'cpuPerMessage' | 'events'>,
  key: 'services' | 'system',
): number | undefined {
  if (endpoint.events <= 0 || none.messages <= 0) return undefined;
  // Scaled to the endpoint run's messages, so runs of slightly different sizes compare.
  const extra = (webhookTotals(endpoint.cpuPerMessage)[key] - webhookTotals(none.cpuPerMessage)[key]) * endpoint.messages;
  return extra / endpoint.events;
}

/** The CPU one webhook event costs from backlogs, in milliseconds: made and relayed (the backlogs' difference), sent (the burst's), and their sum. */
export interface BacklogEventCost {
  readonly made: number;
  readonly sent: number;
  readonly total: number;
}

/**
 * Where an event is made and relayed: dispatch-svc writes it in the transition's transaction and relays it, PostgreSQL
 * and NATS take it. The other processes do the same work with or without the endpoint; their difference between two
 * backlogs is noise only (up to ±0.9 ms a message here), so it is left out.
 */
const eventMakers = { services: ['dispatch-svc'], system: ['dispatch-svc', 'postgres (this run)', 'nats-server'] } as const;

/**
 * (CPU of the event makers in the backlog with the endpoint - in the one without) / events relayed, each backlog's CPU
 * being its per-message figure times the endpoint backlog's messages; plus the burst's CPU per event sent (every
 * process but the receiver). Undefined without events.
 */
export function backlogCpuPerEvent(
  none: Pick<WebhookBacklogRun, 'cpuPerMessage'>,
  endpoint: WebhookBacklogRun,
  burst: Pick<WebhookBurst, 'cpuPerEvent' | 'eventsAfterReady'>,
  key: 'services' | 'system',
): BacklogEventCost | undefined {
  if (endpoint.events <= 0 || burst.eventsAfterReady <= 0) return undefined;
  const makers = (perMessage: Readonly<Record<string, number>>): number => eventMakers[key].reduce((sum, label) => sum + (perMessage[label] ?? 0), 0);
  const made = ((makers(endpoint.cpuPerMessage) - makers(none.cpuPerMessage)) * endpoint.messages) / endpoint.events;
  const sent = webhookTotals(burst.cpuPerEvent)[key];
  return { made, sent, total: made + sent };
}

/** Polls the receiver until it has got `expected` more requests than `before`, or nothing new for `quietMs` past `timeoutMs`. */
async function receiverCaughtUp(receiver: BenchWebhookReceiver, before: number, expected: number, timeoutMs: number, quietMs = 1_500): Promise<WebhookCounts> {
  const deadline = performance.now() + timeoutMs;
  let last = await receiver.counts();
  let since = performance.now();
  for (;;) {
    if (last.requests - before >= expected) return last;
    await sleep(100);
    const now = await receiver.counts();
    if (now.requests !== last.requests) {
      last = now;
      since = performance.now();
    } else if (performance.now() > deadline && performance.now() - since >= quietMs) {
      return now;
    }
  }
}

async function measure(context: BenchContext, mode: WebhookMode, rate: number, receiver: BenchWebhookReceiver): Promise<WebhookRun> {
  const { plan, system } = context;
  const label = mode === 'endpoint' ? 'one endpoint (every event type, answers 204)' : 'no webhook endpoint';
  const url = system.gatewayUrl;
  // One tenant: the endpoint belongs to one project, and every message of the run must be one of its events.
  const request = pacedRequests(system.tenants.slice(0, 1));
  const helpers: Array<readonly [string, number | undefined]> = [[webhookReceiverLabel, receiver.pid]];

  // Warm-up: connections, JIT, caches (and the sender's connection to the receiver), settled before the window.
  const warmAfter = await lastMessageId(system.db);
  const warmBefore = (await receiver.counts()).requests;
  const warmup = await runPaced({ url, rate, durationS: plan.webhookWarmupS, connections: plan.connections, request });
  requireAnswers(context, `webhook ${mode} warm-up`, warmup);
  context.accepted += countOf(warmup, 202) - warmup.replayed;
  const warmed = await waitSettled(system.db, { after: warmAfter, upTo: await quietMessageId(system.db, 15_000) }, plan.settleTimeoutMs);
  await receiverCaughtUp(receiver, warmBefore, mode === 'endpoint' ? warmed.sent : 0, mode === 'endpoint' ? plan.settleTimeoutMs : 0);

  context.progress(`webhook cost, ${label}: ${rate}/s for ${plan.webhookS} s, each message accepted and delivered`);
  const after = await lastMessageId(system.db);
  const countsBefore = await receiver.counts();
  const cpuBefore = await context.cpu(helpers);
  const opened = performance.now();
  const { load, delivered, countsAfter } = await inWindow(context, `webhook ${mode}`, async () => {
    const load = await runPaced({ url, rate, durationS: plan.webhookS, connections: plan.connections, request });
    const upTo = load.timeouts + load.errors === 0 ? await lastMessageId(system.db) : await quietMessageId(system.db, 15_000);
    const delivered = await waitSettled(system.db, { after, upTo }, plan.settleTimeoutMs);
    // With the endpoint, the window closes once the receiver has one message.sent per message sent.
    const countsAfter =
      mode === 'endpoint' ? await receiverCaughtUp(receiver, countsBefore.requests, delivered.sent, plan.settleTimeoutMs) : await receiver.counts();
    return { load, delivered, countsAfter };
  });
  const cpuAfter = await context.cpu(helpers);
  const windowS = (performance.now() - opened) / 1_000;
  requireAnswers(context, `webhook ${mode}`, load);
  context.accepted += countOf(load, 202) - load.replayed;
  if (delivered.failed > 0) context.failures.push(`webhook ${mode}: ${delivered.failed} messages failed delivery`);
  if (delivered.pending > 0) context.progress(`webhook ${mode}: ${delivered.pending} messages undelivered when the window closed; checked again at the end`);
  const run: WebhookRun = {
    mode,
    load,
    messages: delivered.total,
    delivered,
    windowS,
    cpuPerMessage: cpuPerMessage(cpuBefore, cpuAfter, delivered.total),
    events: countsAfter.requests - countsBefore.requests,
  };
  const totals = webhookTotals(run.cpuPerMessage);
  context.progress(
    `  ${run.messages.toLocaleString('en-US')} messages in ${windowS.toFixed(1)} s: services ${totals.services.toFixed(2)} ms, system ${totals.system.toFixed(2)} ms of CPU per message; ${run.events.toLocaleString('en-US')} webhook events received`,
  );
  return run;
}

/** A batch of sends from one tenant accepted with the mailers stopped; then delivered (and their events received) before the next run. */
async function measureAccept(context: BenchContext, mode: WebhookMode, receiver: BenchWebhookReceiver): Promise<WebhookAcceptRun> {
  const { plan, system } = context;
  const [tenant, other] = system.tenants;
  if (!tenant || !other) throw new Error('two tenants needed');
  const helpers: Array<readonly [string, number | undefined]> = [[webhookReceiverLabel, receiver.pid]];
  context.progress(
    `webhook accept path, ${mode === 'endpoint' ? 'one endpoint' : 'no endpoint'}: ${plan.webhookAcceptMessages.toLocaleString('en-US')} sends from one tenant, ` +
      `after ${plan.webhookAcceptWarmUp.toLocaleString('en-US')} unmeasured from another, mailers stopped`,
  );
  await system.stopMailers([0]);
  const after = await lastMessageId(system.db);
  const eventsBefore = (await receiver.counts()).requests;
  // The accept path's own generator (the delivery backlog's, whose row this one is set beside): a send costs the
  // services and the load generator about a fifth more when sent by the bench's http-sender (1.43 against 1.13 ms of
  // machine CPU per send, eight alternating pairs of runs).
  const accept = (from: BenchTenant, amount: number): Promise<ClosedLoopResult> =>
    runClosedLoop({
      url: system.gatewayUrl,
      connections: plan.connections,
      amount,
      maxDurationS: plan.settleTimeoutMs / 1_000,
      requests: [{ path: sendPath, headers: sendHeaders(from), body: sendBody(0) }],
    });
  // The backlog's row is measured on services long busy with sends at saturation; these come after the tracing scenario
  // restarted them and a paced run, when the same sends cost up to twice as much (runs of 500 from a fresh start: 2.68 ms
  // of machine CPU per send for the first, 1.2-1.6 ms from the fifth on, as V8 optimises the path). The unmeasured
  // sends put them in the backlog's condition; from a tenant with no endpoint, so that they make no webhook event.
  const warmUp = await accept(other, plan.webhookAcceptWarmUp);
  requireAnswers(context, `webhook accept ${mode} warm-up`, warmUp);
  context.accepted += countOf(warmUp, 202);
  const cpuBefore = await context.cpu(helpers);
  const load = await inWindow(context, `webhook accept ${mode}`, () => accept(tenant, plan.webhookAcceptMessages));
  const cpuAfter = await context.cpu(helpers);
  requireAnswers(context, `webhook accept ${mode}`, load);
  const messages = countOf(load, 202);
  context.accepted += messages;
  await system.startMailers([0]);
  const delivered = await waitSettled(system.db, { after, upTo: await quietMessageId(system.db, 15_000) }, plan.settleTimeoutMs);
  if (delivered.failed > 0) context.failures.push(`webhook accept ${mode}: ${delivered.failed} messages failed delivery`);
  // An event for each of the measured sends (every type is subscribed: a failure is one too), none for the warm-up's.
  if (mode === 'endpoint') await receiverCaughtUp(receiver, eventsBefore, messages, plan.settleTimeoutMs);
  const run: WebhookAcceptRun = { mode, load, messages, cpuPerMessage: cpuPerMessage(cpuBefore, cpuAfter, messages) };
  const totals = webhookTotals(run.cpuPerMessage);
  context.progress(
    `  ${messages.toLocaleString('en-US')} accepted: services ${totals.services.toFixed(2)} ms, system ${totals.system.toFixed(2)} ms of CPU per send`,
  );
  return run;
}

/** Polls until the events of the range's messages are all published to JetStream (the relay's part is done). */
async function waitRelayed(context: BenchContext, after: number, upTo: number, expected: number): Promise<number> {
  const deadline = performance.now() + context.plan.settleTimeoutMs;
  for (;;) {
    const { rows } = await context.system.db.query<{ published: number }>(
      'SELECT count(*)::int AS published FROM webhook_events WHERE message_id > $1 AND message_id <= $2 AND published_at IS NOT NULL',
      [after, upTo],
    );
    const published = rows[0]?.published ?? 0;
    if (published >= expected || performance.now() > deadline) return published;
    await sleep(250);
  }
}

/** Sends `count` messages from the first tenant as fast as the gateway takes them; resolves once they are delivered (and with `relayed`, their events relayed). */
async function sendBacklog(context: BenchContext, count: number, relayed: boolean): Promise<{ load: LoadResult; delivered: DeliveryState; events: number }> {
  const { plan, system } = context;
  const [tenant] = system.tenants;
  if (!tenant) throw new Error('no tenant');
  const after = await lastMessageId(system.db);
  const requests = Array.from({ length: count }, (_, index) => ({ path: sendPath, headers: sendHeaders(tenant), body: Buffer.from(sendBody(index)) }));
  const load = await runBatch({ url: system.gatewayUrl, connections: plan.connections, requests });
  const upTo = load.timeouts + load.errors === 0 ? await lastMessageId(system.db) : await quietMessageId(system.db, 15_000);
  const delivered = await waitSettled(system.db, { after, upTo }, plan.settleTimeoutMs);
  const events = relayed ? await waitRelayed(context, after, upTo, delivered.sent) : 0;
  return { load, delivered, events };
}

/**
 * N messages from one tenant sent as fast as the gateway takes them and delivered by one mailer, webhook-svc stopped;
 * with the endpoint the window closes once their events are relayed onto JetStream. The backlog without the endpoint
 * comes first, after a warm-up of a quarter of it (the first saturated stretch after the mailers' restart cost every
 * process more), and the one with the endpoint right after it, so that both find the system in the same state.
 */
async function measureBacklog(context: BenchContext, mode: WebhookMode, receiver: BenchWebhookReceiver): Promise<WebhookBacklogRun> {
  const { plan, system } = context;
  const helpers: Array<readonly [string, number | undefined]> = [[webhookReceiverLabel, receiver.pid]];
  if (system.stack.pid('webhook-svc') !== undefined) {
    system.stack.kill('webhook-svc', 'SIGTERM');
    await system.stack.exited('webhook-svc');
  }
  if (mode === 'none') {
    const warmup = await sendBacklog(context, Math.ceil(plan.webhookBurst / 4), false);
    requireAnswers(context, 'webhook backlog warm-up', warmup.load);
    context.accepted += countOf(warmup.load, 202);
  }
  context.progress(
    `webhook backlog, ${mode === 'endpoint' ? 'one endpoint' : 'no endpoint'}, webhook-svc stopped: ${plan.webhookBurst.toLocaleString('en-US')} messages sent as fast as accepted, one mailer delivering`,
  );
  const cpuBefore = await context.cpu(helpers);
  const { load, delivered, events } = await inWindow(context, `webhook backlog ${mode}`, () => sendBacklog(context, plan.webhookBurst, mode === 'endpoint'));
  const cpuAfter = await context.cpu(helpers);
  requireAnswers(context, `webhook backlog ${mode}`, load);
  context.accepted += countOf(load, 202);
  if (delivered.failed > 0) context.failures.push(`webhook backlog ${mode}: ${delivered.failed} messages failed delivery`);
  if (mode === 'endpoint' && events < delivered.sent)
    context.progress(`webhook backlog: only ${events} of ${delivered.sent} events relayed when the window closed`);
  const run: WebhookBacklogRun = { mode, load, messages: delivered.total, events, cpuPerMessage: cpuPerMessage(cpuBefore, cpuAfter, delivered.total) };
  const totals = webhookTotals(run.cpuPerMessage);
  context.progress(
    `  ${run.messages.toLocaleString('en-US')} messages, ${events.toLocaleString('en-US')} events relayed: services ${totals.services.toFixed(2)} ms, system ${totals.system.toFixed(2)} ms of CPU per message`,
  );
  return run;
}

/** The endpoint's backlog (webhook-svc stopped), then one webhook-svc started to send its events: the time it takes and the CPU per event once it is ready. */
async function measureBurst(context: BenchContext, receiver: BenchWebhookReceiver, into: WebhookCostResult): Promise<WebhookBurst> {
  const { plan, system } = context;
  const helpers: Array<readonly [string, number | undefined]> = [[webhookReceiverLabel, receiver.pid]];
  const backlog = await measureBacklog(context, 'endpoint', receiver);
  into.backlogEndpoint = backlog;
  const relayed = backlog.events;

  context.progress(`webhook burst: ${relayed.toLocaleString('en-US')} events waiting; one webhook-svc started`);
  await receiver.resetTimes();
  const before = (await receiver.counts()).requests;
  const started = performance.now();
  await system.stack.restart('webhook-svc');
  // Its start-up is not an event's cost: the CPU (and the profiles' window) is counted from its readiness, over the
  // events sent since.
  const { counts, readyCounts, cpuReady, cpuAfter, updatesReady } = await inWindow(context, 'webhook burst', async () => {
    const cpuReady = await context.cpu(helpers);
    const updatesReady = await tableUpdates(system.db, 'webhook_deliveries');
    const readyCounts = await receiver.counts();
    const counts = await receiverCaughtUp(receiver, before, relayed, plan.settleTimeoutMs);
    return { counts, readyCounts, cpuReady, cpuAfter: await context.cpu(helpers), updatesReady };
  });
  const ready = performance.now();
  const endpointBusy = (action: string) => metricValue(system.stack.ports.metrics.webhook, 'notify_webhook_endpoint_busy_total', { action });
  const events = counts.requests - before;
  const eventsAfterReady = counts.requests - readyCounts.requests;
  const spanS = counts.firstAt !== null && counts.lastAt !== null ? (counts.lastAt - counts.firstAt) / 1_000 : 0;
  // The receiver's clock is another process's: the time from the start is the poll's, to within 100 ms.
  const fromStartS = (ready - started) / 1_000;
  const burst: WebhookBurst = {
    messages: backlog.messages,
    events,
    load: backlog.load,
    eventsAfterReady,
    cpuPerEvent: cpuPerMessage(cpuReady, cpuAfter, eventsAfterReady),
    fromStartS,
    spanS,
    perSecond: spanS > 0 ? (events - 1) / spanS : 0,
    deliveryWrites: await tableWritesSince(system.db, 'webhook_deliveries', updatesReady),
    // Its counters started at zero with the restart.
    endpointBusy: { parked: (await endpointBusy('parked')) ?? 0, putBack: (await endpointBusy('put_back')) ?? 0 },
  };
  if (events < backlog.messages) context.failures.push(`webhook burst: the receiver got ${events} events for ${backlog.messages} messages sent`);
  const totals = webhookTotals(burst.cpuPerEvent);
  context.progress(
    `  ${events.toLocaleString('en-US')} events in ${spanS.toFixed(2)} s from the first to the last (${Math.round(burst.perSecond)}/s), ${fromStartS.toFixed(1)} s from the start; ` +
      `${eventsAfterReady.toLocaleString('en-US')} after it was ready: services ${totals.services.toFixed(2)} ms, system ${totals.system.toFixed(2)} ms of CPU per event`,
  );
  return burst;
}

/**
 * Runs, in order, the half without the endpoint, the accept path without it, both backlogs, the burst, the accept path
 * with the endpoint and the half with it, filling `into` as each finishes; the endpoint is removed at the end.
 */
export async function runWebhookCost(context: BenchContext, into: WebhookCostResult): Promise<void> {
  const { system } = context;
  const [tenant] = system.tenants;
  if (!tenant) throw new Error('no tenant');
  const receiver = await startBenchWebhookReceiver();
  const admin = new GrpcClient(dispatchProto.WebhookAdminService.service, system.stack.env.DISPATCH_SVC_ADDR, {
    token: system.stack.env.ADMIN_TOKEN,
    deadlineMs: 10_000,
  });
  let endpointId: number | undefined;
  try {
    // As the tracing-cost scenario leaves the other services: no OTLP endpoint, whatever the bench inherited.
    await system.stack.restart('webhook-svc', 0, { OTEL_EXPORTER_OTLP_ENDPOINT: '', OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: '', OTEL_BSP_SCHEDULE_DELAY: '' });
    into.none = await measure(context, 'none', into.rate, receiver);
    into.acceptNone = await measureAccept(context, 'none', receiver);
    const unasked = (await receiver.counts()).requests;
    if (unasked > 0) context.failures.push(`webhook none: the receiver got ${unasked} requests with no endpoint`);
    into.backlogNone = await measureBacklog(context, 'none', receiver);
    const created = await admin.call('CreateWebhook', { projectId: tenant.projectId, url: receiver.url, eventTypes: everyEventType });
    endpointId = Number(created.webhook?.id);
    into.burst = await measureBurst(context, receiver, into);
    into.acceptEndpoint = await measureAccept(context, 'endpoint', receiver);
    into.endpoint = await measure(context, 'endpoint', into.rate, receiver);
    if (into.endpoint.events < into.endpoint.delivered.sent) {
      context.failures.push(`webhook endpoint: the receiver got ${into.endpoint.events} events for ${into.endpoint.delivered.sent} messages sent`);
    }
  } finally {
    // Later scenarios run without the endpoint; webhook-svc is left running.
    if (endpointId !== undefined) await admin.call('DeleteWebhook', { id: endpointId }).catch(() => undefined);
    if (system.stack.pid('webhook-svc') === undefined) await system.stack.restart('webhook-svc').catch(() => undefined);
    admin.close();
    await receiver.stop();
  }
}
