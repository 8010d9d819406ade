// End to end with mail flowing. The sustained rate is what one mailer's system both accepts and delivers: the lower
// of "ingest at saturation, one mailer delivering" and "delivery drain" (ingest.ts, delivery.ts), judged against raw
// pooled nodemailer into the same sink, measured in the same run. Then sends arrive open-loop at half that rate, one
// mailer delivering as they come: the latency of each accept (from the request's start, as in the other paced runs)
// and, from the database, the time from acceptance to `sent` of each of those messages.
import { countOf } from '../generators/load-result.ts';
import { type PacedLoadResult, runPaced } from '../generators/paced-load.ts';
import { runQueueWaitPerRequest } from '../system/cpu-usage.ts';
import { type BenchContext, inWindow, requireAnswers } from './context.ts';
import { type Settled, settle } from './ingest.ts';
import { lastMessageId, type QueuedToSent, waitSettled } from './message-progress.ts';
import { pacedRequests } from './send-requests.ts';

export interface EndToEndResult {
  /** The sustained rate the offered rate was derived from, and its two sources. */
  readonly sustainedPerSecond: number;
  readonly acceptedWhileDeliveringPerSecond: number;
  readonly drainPerSecond: number;
  /** Requests per second offered: half the sustained rate. */
  readonly rate: number;
  readonly load: PacedLoadResult;
  /** 202 answers per second over the scheduled duration (a run that falls behind is not credited for stretching). */
  readonly acceptedPerSecond: number;
  readonly queuedToSent: QueuedToSent;
  readonly settled: Settled;
  /** Milliseconds per send each process group waited for a CPU (undefined where the kernel keeps no such figure). */
  readonly runQueueWaitMs?: Record<string, number>;
}

/** Half the sustained rate, in whole requests per second (at least 1). */
export function halfSustainedRate(sustained: number): number {
  return Math.max(1, Math.round(sustained / 2));
}

export async function runEndToEnd(
  context: BenchContext,
  sources: { acceptedWhileDelivering: number | undefined; drain: number | undefined },
): Promise<EndToEndResult | undefined> {
  const { plan, system } = context;
  const { acceptedWhileDelivering, drain } = sources;
  if (!acceptedWhileDelivering || !drain) {
    context.progress('end to end: not run, the saturation or the drain figure is missing');
    return undefined;
  }
  // What one mailer's system both accepts and delivers: the lower of the two.
  const sustained = Math.min(acceptedWhileDelivering, drain);
  const rate = halfSustainedRate(sustained);
  const after = await lastMessageId(system.db);
  // The run starts on an empty queue: what the drain left (it gives up at the settle timeout) is delivered first.
  const left = await waitSettled(system.db, { after: 0, upTo: after }, plan.settleTimeoutMs);
  if (left.pending > 0) context.progress(`end to end: ${left.pending} earlier messages still undelivered; the run shares the mailer with them`);
  context.progress(`end to end: sustained ${Math.round(sustained)}/s; ${rate}/s offered for ${plan.endToEndS} s, one mailer delivering`);
  const waitBefore = await context.runQueueWait();
  const load = await inWindow(context, 'end to end', () =>
    runPaced({ url: system.gatewayUrl, rate, durationS: plan.endToEndS, connections: plan.connections, request: pacedRequests(system.tenants) }),
  );
  const runQueueWaitMs = runQueueWaitPerRequest(waitBefore, await context.runQueueWait(), load.completed);
  requireAnswers(context, `end to end at ${rate}/s`, load, { timeoutsAllowed: true });
  context.accepted += countOf(load, 202) - load.replayed;
  const acceptedPerSecond = countOf(load, 202) / Math.max(plan.endToEndS, load.durationS);
  context.progress(
    `  achieved ${Math.round(acceptedPerSecond)}/s, accept latency p50 ${load.latencyMs.p50.toFixed(1)} ms, p99 ${load.latencyMs.p99.toFixed(1)} ms`,
  );
  const delivered = await settle(context, `end to end at ${rate}/s`, after);
  context.progress(`  queued->sent p50 ${Math.round(delivered.queuedToSent.p50Ms)} ms, p99 ${Math.round(delivered.queuedToSent.p99Ms)} ms`);
  return {
    sustainedPerSecond: sustained,
    acceptedWhileDeliveringPerSecond: acceptedWhileDelivering,
    drainPerSecond: drain,
    rate,
    load,
    acceptedPerSecond,
    ...delivered,
    ...(runQueueWaitMs ? { runQueueWaitMs } : {}),
  };
}
