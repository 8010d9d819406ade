// Scale-out of the mailer: the sink holds every recipient for `scaleDelayMs` (a slow relay, so SMTP round trips and
// not this machine's two cores are the limit), and 1, 2 and 4 replicas in turn work through a backlog accepted
// beforehand, while the bench counts what the sink stores over a fixed window. Every replica is stopped afterwards.
import { setTimeout as sleep } from 'node:timers/promises';
import type { BenchContext, BenchPlan } from './context.ts';
import { deliveryState, type IdRange } from './message-progress.ts';

export interface ScaleOutRun {
  readonly replicas: number;
  /** Mails stored per second during the window. */
  readonly perSecond: number;
  readonly windowS: number;
  /** Messages of the backlog still undelivered at the end of the window: 0 would mean the replicas ran dry. */
  readonly backlogLeft: number;
}

export interface ScaleOutResult {
  readonly delayMs: number;
  readonly runs: ScaleOutRun[];
}

/** Time each set of replicas runs before the window opens: pools connect, the first pulls arrive. */
const warmupMs = 1_000;
/** What a replica may deliver while the others of its set are still starting. */
const startAllowanceS = 3;

/** Messages the scale-out windows may consume at most: each replica at the best rate the delay allows, with room to spare. */
export function scaleOutBacklog(plan: BenchPlan): number {
  const bestPerReplica = (plan.smtpPoolSize * 1_000) / plan.scaleDelayMs;
  const replicaSeconds = plan.scaleReplicas.reduce((sum, replicas) => sum + replicas, 0) * (plan.scaleWindowS + warmupMs / 1_000 + startAllowanceS);
  return Math.ceil(bestPerReplica * replicaSeconds * 1.2);
}

/** Runs the windows over the messages of `backlog` (all mailers stopped on entry and on return). */
export async function runScaleOut(context: BenchContext, backlog: IdRange, into: ScaleOutResult): Promise<void> {
  const { plan, system } = context;
  const all = Array.from({ length: Math.max(...plan.scaleReplicas) }, (_, index) => index);
  await system.sink.setDelay(plan.scaleDelayMs);
  try {
    for (const replicas of plan.scaleReplicas) {
      const indexes = all.slice(0, replicas);
      context.progress(`scale-out: ${replicas} mailer replica${replicas === 1 ? '' : 's'}, sink +${plan.scaleDelayMs} ms per mail, ${plan.scaleWindowS} s`);
      await system.startMailers(indexes);
      await sleep(warmupMs);
      const storedBefore = await system.sink.received();
      const opened = performance.now();
      await sleep(plan.scaleWindowS * 1_000);
      const stored = (await system.sink.received()) - storedBefore;
      const windowS = (performance.now() - opened) / 1_000;
      const backlogLeft = (await deliveryState(system.db, backlog)).pending;
      await system.stopMailers(indexes);
      into.runs.push({ replicas, perSecond: stored / windowS, windowS, backlogLeft });
      context.progress(`  ${(stored / windowS).toFixed(1)}/s, ${backlogLeft} messages left`);
      if (backlogLeft === 0) context.failures.push(`scale-out with ${replicas} replicas ran out of backlog: the figure is too low (bench sizing fault)`);
    }
  } finally {
    await system.sink.setDelay(0);
  }
}
