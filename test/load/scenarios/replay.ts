// Idempotent replays: many Idempotency-Keys are accepted once, then the same requests (same key, same body, same
// tenant) are sent again and again at a fixed rate. Every answer must be the stored 202 marked as a replay, and no
// replay may create a message; the figure is the replays' latency. The rate is the plan's, or half of what the system
// accepted at saturation if that is lower: the figure is the latency of a replay, not of a queue. The replays start
// once the keys' own messages are delivered, so the mailer is idle as the row says; the same keys are replayed again
// while one mailer drains the delivery backlog (delivery.ts, `replayWhileDraining`).
import { randomUUID } from 'node:crypto';
import { runBatch } from '../generators/batch-load.ts';
import type { LoadResult } from '../generators/load-result.ts';
import { countOf } from '../generators/load-result.ts';
import { type PacedLoadResult, type PacedRequest, runPaced } from '../generators/paced-load.ts';
import { runQueueWaitPerRequest } from '../system/cpu-usage.ts';
import type { BenchTenant } from '../system/system-under-test.ts';
import { type BenchContext, inWindow, requireAnswers } from './context.ts';
import { lastMessageId, waitSettled } from './message-progress.ts';
import { sendBody, sendHeaders, sendPath } from './send-requests.ts';

export interface ReplayResult {
  readonly keys: number;
  readonly rate: number;
  /** The first request of every key. */
  readonly create: LoadResult & { readonly replayed: number };
  readonly replay: PacedLoadResult;
  /** Messages created while replaying: must be 0. */
  readonly newMessages: number;
  /** Milliseconds per replay each process group waited for a CPU (undefined where the kernel keeps no such figure). */
  readonly runQueueWaitMs?: Record<string, number>;
}

/** The plan's replay rate, or half of the saturation figure rounded down to 50/s if lower (at least 50/s). */
export function replayRate(planned: number, saturatedPerSecond: number | undefined): number {
  if (saturatedPerSecond === undefined) return planned;
  return Math.min(planned, Math.max(50, Math.floor(saturatedPerSecond / 2 / 50) * 50));
}

/** One keyed send per Idempotency-Key, the tenants in turn: accepted once by runReplay, replayed from then on. */
export function keyedRequests(tenants: readonly BenchTenant[], keys: number): PacedRequest[] {
  return Array.from({ length: keys }, (_, index) => {
    const tenant = index % tenants.length;
    return { path: sendPath, headers: sendHeaders(tenants[tenant] as BenchTenant, randomUUID()), body: Buffer.from(sendBody(tenant)) };
  });
}

/**
 * Seconds of replays before the measured ones, checked like them but not in the figure. The keys' tenants were last
 * seen longer ago than the gateway's AUTH_CACHE_TTL (10 s), so the first replay of each asks auth-svc, all 50 at
 * once (15-60 ms each on the bench's machine); from then on the cache keeps them (refreshed ahead of expiry). As the
 * ingest's warm-up, it leaves that start-up out of a steady-state figure.
 */
const replayWarmupS = 1;

/**
 * Replays `keyed` (already accepted) open-loop, after a warm-up; fails the bench when a replay created a message or
 * was answered as a new send.
 */
export async function replayKeys(
  context: BenchContext,
  what: string,
  keyed: readonly PacedRequest[],
  options: { rate: number; durationS: number },
): Promise<Pick<ReplayResult, 'replay' | 'newMessages' | 'runQueueWaitMs'>> {
  const { plan, system } = context;
  const before = await lastMessageId(system.db);
  const replayFor = (durationS: number): Promise<PacedLoadResult> =>
    runPaced({
      url: system.gatewayUrl,
      rate: options.rate,
      connections: plan.connections,
      request: (index) => keyed[index % keyed.length] as PacedRequest,
      durationS,
    });
  const warmup = await replayFor(replayWarmupS);
  const waitBefore = await context.runQueueWait();
  const replay = await replayFor(options.durationS);
  const runQueueWaitMs = runQueueWaitPerRequest(waitBefore, await context.runQueueWait(), replay.completed);
  requireAnswers(context, `${what} (warm-up)`, warmup);
  requireAnswers(context, what, replay);
  context.progress(`  latency p50 ${replay.latencyMs.p50.toFixed(1)} ms, p99 ${replay.latencyMs.p99.toFixed(1)} ms`);
  const newMessages = (await lastMessageId(system.db)) - before;
  const notReplayed = [warmup, replay].reduce((sum, run) => sum + countOf(run, 202) - run.replayed, 0);
  if (newMessages > 0) context.failures.push(`${what}: ${newMessages} messages were created by requests that should have been replays`);
  if (notReplayed > 0) context.failures.push(`${what}: ${notReplayed} answers were 202 without Idempotent-Replayed`);
  return { replay, newMessages, ...(runQueueWaitMs ? { runQueueWaitMs } : {}) };
}

export async function runReplay(context: BenchContext, keyed: readonly PacedRequest[], saturatedPerSecond: number | undefined): Promise<ReplayResult> {
  const { plan, system } = context;
  const rate = replayRate(plan.replayRate, saturatedPerSecond);

  context.progress(`replay: accepting ${plan.replayKeys.toLocaleString('en-US')} idempotency keys`);
  const after = await lastMessageId(system.db);
  const create = await runBatch({ url: system.gatewayUrl, connections: plan.connections, requests: keyed });
  requireAnswers(context, 'replay (first requests)', create);
  context.accepted += countOf(create, 202) - create.replayed;
  // Their deliveries would otherwise share the replays' window: this row is the one with the mailer idle.
  const delivered = await waitSettled(system.db, { after, upTo: await lastMessageId(system.db) }, plan.settleTimeoutMs);
  context.progress(`  their messages delivered within ${delivered.waitedS.toFixed(1)} s`);

  context.progress(`replay: replaying them at ${rate}/s for ${plan.replayS} s`);
  const replayed = await inWindow(context, 'replay', () => replayKeys(context, 'replay', keyed, { rate, durationS: plan.replayS }));
  return { keys: keyed.length, rate, create, ...replayed };
}
