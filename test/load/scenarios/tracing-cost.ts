// What tracing costs. The same workload runs twice on the same system: sends at a fixed rate well below saturation,
// accepted and delivered as they come (one mailer running), first with every service exporting its spans to an OTLP
// receiver (test/harness/otlp-receiver.ts, in a process of its own, decoding every export as a collector would), then
// as deployed by default, with no OTLP endpoint. Before each run every service is restarted with that configuration
// and warmed up; the CPU of every process is counted from the first request until every message of the run is
// delivered and the last spans have reached the receiver, and divided by the messages. The receiver's spans prove
// the figure includes real export; its own CPU is a collector's, reported apart and left out of the totals.
import { setTimeout as sleep } from 'node:timers/promises';
import { countOf } from '../generators/load-result.ts';
import { type PacedLoadResult, runPaced } from '../generators/paced-load.ts';
import { cpuPerMessage, sinkLabel } from '../system/cpu-usage.ts';
import { type BenchTraceReceiver, startBenchTraceReceiver, type TraceCounts } from '../system/trace-receiver.ts';
import { type BenchContext, inWindow, requireAnswers } from './context.ts';
import { type DeliveryState, lastMessageId, quietMessageId, waitSettled } from './message-progress.ts';
import { pacedRequests } from './send-requests.ts';

export type TracingMode = 'on' | 'off';

export interface TracingRun {
  readonly mode: TracingMode;
  readonly load: PacedLoadResult;
  /** Messages the run created (the divisor), and their state when the window closed. */
  readonly messages: number;
  readonly delivered: DeliveryState & { waitedS: number };
  /** From the first request until the run's messages were delivered and the receiver had been quiet. */
  readonly windowS: number;
  /** CPU milliseconds per message, per process group (see system/cpu-usage.ts). */
  readonly cpuPerMessage: Record<string, number>;
  /** Spans the receiver got during the window, in all and per service. */
  readonly spans: number;
  readonly spansByService: Record<string, number>;
  readonly exportRequests: number;
  readonly undecodable: number;
}

export interface TracingCostResult {
  /** Requests per second offered in both runs. */
  readonly rate: number;
  on?: TracingRun;
  off?: TracingRun;
}

/** The four Notify services: where tracing's cost lands. */
export const serviceLabels = ['gateway', 'auth-svc', 'dispatch-svc', 'mailer-svc'] as const;
/** The receiver's CPU group: a collector's work, not Notify's. */
export const receiverLabel = 'otlp-receiver';
const notAccounted = new Set(['machine total', 'other (not this run)', receiverLabel]);

/**
 * CPU milliseconds per message: `services`, the four services; `system`, every process of the run (the services,
 * PostgreSQL, NATS, Redis, the SMTP sink and the load generator), without the receiver and without the machine's
 * other work; `sink`, the SMTP sink's part of `system`; `receiver`, the receiver alone.
 */
export function tracingTotals(perMessage: Readonly<Record<string, number>>): { services: number; system: number; sink: number; receiver: number } {
  let services = 0;
  let system = 0;
  for (const [label, ms] of Object.entries(perMessage)) {
    if (notAccounted.has(label)) continue;
    system += ms;
    if ((serviceLabels as readonly string[]).includes(label)) services += ms;
  }
  return { services, system, sink: perMessage[sinkLabel] ?? 0, receiver: perMessage[receiverLabel] ?? 0 };
}

/** The planned rate, or half of what the system accepted at saturation (in steps of 50, at least 50) if that is lower. */
export function tracingRate(planned: number, saturatedPerSecond: number | undefined): number {
  if (saturatedPerSecond === undefined) return planned;
  return Math.min(planned, Math.max(50, Math.floor(saturatedPerSecond / 2 / 50) * 50));
}

/** The variables each run's services get: an OTLP endpoint (spans exported within a second), or none at all. */
function tracingEnv(mode: TracingMode, receiver: BenchTraceReceiver): Record<string, string> {
  return mode === 'on'
    ? { OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: receiver.tracesUrl, OTEL_BSP_SCHEDULE_DELAY: '1000' }
    : // Empty is unset to the services, and overrides an endpoint the bench itself may have inherited.
      { OTEL_EXPORTER_OTLP_ENDPOINT: '', OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: '', OTEL_BSP_SCHEDULE_DELAY: '' };
}

/** Every service restarted with `env`, in the order the stack starts them; only mailer replica 0 runs. */
async function restartServices(context: BenchContext, env: Record<string, string>): Promise<void> {
  const { stack } = context.system;
  await Promise.all([stack.restart('auth-svc', 0, env), stack.restart('dispatch-svc', 0, env)]);
  await stack.restart('mailer-svc', 0, env);
  await stack.restart('gateway', 0, env);
}

/** Waits until the receiver has got nothing new for `quietMs` (the services export at least every second), at most `timeoutMs`; both runs wait alike. */
async function receiverQuiet(receiver: BenchTraceReceiver, quietMs = 1_500, timeoutMs = 15_000): Promise<TraceCounts> {
  const deadline = performance.now() + timeoutMs;
  let last = await receiver.counts();
  let since = performance.now();
  for (;;) {
    await sleep(250);
    const now = await receiver.counts();
    if (now.spans !== last.spans) {
      last = now;
      since = performance.now();
    } else if (performance.now() - since >= quietMs || performance.now() > deadline) {
      return now;
    }
  }
}

function difference(after: Readonly<Record<string, number>>, before: Readonly<Record<string, number>>): Record<string, number> {
  const grown: Record<string, number> = {};
  for (const [key, value] of Object.entries(after)) if (value > (before[key] ?? 0)) grown[key] = value - (before[key] ?? 0);
  return grown;
}

async function measure(context: BenchContext, mode: TracingMode, rate: number, receiver: BenchTraceReceiver): Promise<TracingRun> {
  const { plan, system } = context;
  const label = mode === 'on' ? 'OTLP endpoint, spans exported' : 'no OTLP endpoint (the default)';
  context.progress(`tracing cost, ${label}: restarting the services`);
  await restartServices(context, tracingEnv(mode, receiver));
  const url = system.gatewayUrl;
  const request = pacedRequests(system.tenants);

  // Warm-up: connections, JIT, caches; its messages delivered and its spans exported before the window opens.
  const warmAfter = await lastMessageId(system.db);
  const warmup = await runPaced({ url, rate, durationS: plan.tracingWarmupS, connections: plan.connections, request });
  requireAnswers(context, `tracing ${mode} warm-up`, warmup);
  context.accepted += countOf(warmup, 202) - warmup.replayed;
  await waitSettled(system.db, { after: warmAfter, upTo: await quietMessageId(system.db, 15_000) }, plan.settleTimeoutMs);
  const spansBefore = await receiverQuiet(receiver);

  context.progress(`tracing cost, ${label}: ${rate}/s for ${plan.tracingS} s, each message accepted and delivered`);
  const helpers: Array<readonly [string, number | undefined]> = [[receiverLabel, receiver.pid]];
  const after = await lastMessageId(system.db);
  const cpuBefore = await context.cpu(helpers);
  const opened = performance.now();
  const { load, delivered, spansAfter } = await inWindow(context, `tracing ${mode}`, async () => {
    const load = await runPaced({ url, rate, durationS: plan.tracingS, connections: plan.connections, request });
    // Every request answered: every message exists. Otherwise the ones the client gave up on may still appear.
    const upTo = load.timeouts + load.errors === 0 ? await lastMessageId(system.db) : await quietMessageId(system.db, 15_000);
    const range = { after, upTo };
    const delivered = await waitSettled(system.db, range, plan.settleTimeoutMs);
    return { load, delivered, spansAfter: await receiverQuiet(receiver) };
  });
  const cpuAfter = await context.cpu(helpers);
  const windowS = (performance.now() - opened) / 1_000;
  requireAnswers(context, `tracing ${mode}`, load);
  context.accepted += countOf(load, 202) - load.replayed;
  if (delivered.failed > 0) context.failures.push(`tracing ${mode}: ${delivered.failed} messages failed delivery`);
  if (delivered.pending > 0) context.progress(`tracing ${mode}: ${delivered.pending} messages undelivered when the window closed; checked again at the end`);
  const messages = delivered.total;
  const run: TracingRun = {
    mode,
    load,
    messages,
    delivered,
    windowS,
    cpuPerMessage: cpuPerMessage(cpuBefore, cpuAfter, messages),
    spans: spansAfter.spans - spansBefore.spans,
    spansByService: difference(spansAfter.byService, spansBefore.byService),
    exportRequests: spansAfter.requests - spansBefore.requests,
    undecodable: spansAfter.undecodable - spansBefore.undecodable,
  };
  const totals = tracingTotals(run.cpuPerMessage);
  context.progress(
    `  ${messages.toLocaleString('en-US')} messages in ${windowS.toFixed(1)} s: services ${totals.services.toFixed(2)} ms, system ${totals.system.toFixed(2)} ms of CPU per message; ${run.spans.toLocaleString('en-US')} spans received`,
  );
  return run;
}

/** Runs both halves at `into.rate`, filling `into` as each finishes. */
export async function runTracingCost(context: BenchContext, into: TracingCostResult): Promise<void> {
  const receiver = await startBenchTraceReceiver();
  try {
    // Tracing on first, so the services are left as deployed by default; the receiver outlives the restart that
    // ends the traced run (the services flush their last spans as they stop).
    into.on = await measure(context, 'on', into.rate, receiver);
    if (into.on.spans === 0) context.failures.push('tracing on: the OTLP receiver got no span, so the figure does not include export');
    if (into.on.undecodable > 0) context.failures.push(`tracing on: ${into.on.undecodable} export requests could not be decoded`);
    into.off = await measure(context, 'off', into.rate, receiver);
    if (into.off.spans > 0) context.failures.push(`tracing off: the OTLP receiver got ${into.off.spans} spans with no endpoint configured`);
  } finally {
    await receiver.stop();
  }
}
