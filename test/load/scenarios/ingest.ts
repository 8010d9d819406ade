// Ingest through the full system (gateway, auth-svc, dispatch-svc, PostgreSQL, Redis, NATS, one mailer delivering
// as it goes): accepted sends per second at saturation, after a short warm-up. Then the bench waits for the run's
// messages to be delivered, so the next scenario starts without a backlog, and reads from the database how long each
// message took from acceptance to `sent`. Latency at a fixed rate is measured end to end (end-to-end.ts), at a rate
// derived from this figure and the delivery drain.
import { type ClosedLoopResult, runClosedLoop } from '../generators/closed-loop.ts';
import { countOf } from '../generators/load-result.ts';
import { runPaced } from '../generators/paced-load.ts';
import { cpuPerMessage } from '../system/cpu-usage.ts';
import { type BenchContext, inWindow, requireAnswers } from './context.ts';
import { type DeliveryState, lastMessageId, type QueuedToSent, queuedToSent, quietMessageId, waitSettled } from './message-progress.ts';
import { closedLoopRequests, pacedRequests } from './send-requests.ts';

export interface Settled extends DeliveryState {
  readonly waitedS: number;
}

export interface SaturatedIngest {
  readonly load: ClosedLoopResult;
  /** CPU milliseconds per accepted message, per process group, during the run. */
  readonly cpuPerMessage: Record<string, number>;
  readonly acceptedPerSecond: number;
  readonly queuedToSent: QueuedToSent;
  readonly settled: Settled;
}

/** Filled in when the run finishes, so a bench stopped half-way still reports what it measured. */
export interface IngestResult {
  saturation?: SaturatedIngest;
}

/**
 * Waits for the messages a run created to be delivered; a message that fails or never leaves fails the bench. Requests
 * the client gave up on may still be in the services: the range closes once no new message appeared for a second.
 */
export async function settle(context: BenchContext, what: string, after: number): Promise<{ settled: Settled; queuedToSent: QueuedToSent }> {
  const range = { after, upTo: await quietMessageId(context.system.db, 15_000) };
  const settled = await waitSettled(context.system.db, range, context.plan.settleTimeoutMs);
  context.progress(`  delivered ${settled.sent} of ${settled.total} within ${settled.waitedS.toFixed(1)} s of the run's end`);
  if (settled.failed > 0) context.failures.push(`${what}: ${settled.failed} messages failed delivery`);
  if (settled.pending > 0)
    context.progress(`${what}: ${settled.pending} messages still undelivered after ${Math.round(settled.waitedS)} s; checked again at the end`);
  return { settled, queuedToSent: await queuedToSent(context.system.db, range) };
}

export async function runIngest(context: BenchContext, into: IngestResult): Promise<void> {
  const { plan, system } = context;
  const url = system.gatewayUrl;
  const request = pacedRequests(system.tenants);

  // Warm-up: connections, JIT, auth caches. Its messages count for the loss check, its figures are not reported.
  context.progress(`ingest warm-up: ${plan.warmupRate}/s for ${plan.warmupS} s`);
  const warmAfter = await lastMessageId(system.db);
  const warmup = await inWindow(context, 'ingest', () =>
    runPaced({ url, rate: plan.warmupRate, durationS: plan.warmupS, connections: plan.connections, request }),
  );
  requireAnswers(context, 'ingest warm-up', warmup);
  context.accepted += countOf(warmup, 202) - warmup.replayed;
  // Delivered before the saturation run, so its mailer starts without a backlog.
  await waitSettled(system.db, { after: warmAfter, upTo: await quietMessageId(system.db, 15_000) }, plan.settleTimeoutMs);

  context.progress(`ingest at saturation: ${plan.connections} connections for ${plan.saturationS} s`);
  const after = await lastMessageId(system.db);
  const cpuBefore = await context.cpu();
  const load = await inWindow(context, 'ingest', () =>
    runClosedLoop({ url, connections: plan.connections, durationS: plan.saturationS, requests: closedLoopRequests(system.tenants) }),
  );
  const cpu = cpuPerMessage(cpuBefore, await context.cpu(), countOf(load, 202));
  requireAnswers(context, 'ingest at saturation', load);
  context.accepted += countOf(load, 202);
  const acceptedPerSecond = countOf(load, 202) / load.durationS;
  context.progress(`  accepted ${Math.round(acceptedPerSecond)}/s, latency p50 ${load.latencyMs.p50} ms, p99 ${load.latencyMs.p99} ms`);
  const delivered = await settle(context, 'ingest at saturation', after);
  into.saturation = { load, acceptedPerSecond, cpuPerMessage: cpu, ...delivered };
}
