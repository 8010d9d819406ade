// Scale-out of the mailer: the sink holds every recipient for `scaleDelayMs` (a slow relay, so SMTP round trips and
// not this machine's two cores are the limit), a backlog is accepted with every mailer stopped, then 1, 2 and 4
// replicas in turn drain it while the bench counts what the sink stores over a fixed window.
import { setTimeout as sleep } from 'node:timers/promises';
import { runClosedLoop, type ClosedLoopResult } from '../generators/closed-loop.ts';
import { countOf } from '../generators/load-result.ts';
import { requireAnswers, type BenchContext } from './context.ts';
import { deliveryState, lastMessageId } from './message-progress.ts';
import { closedLoopRequests } from './send-requests.ts';

export interface ScaleOutRun {
  readonly replicas: number;
  /** Mails stored per second during the window. */
  readonly perSecond: number;
  readonly windowS: number;
  /** Messages still waiting at the end of the window: 0 would mean the replicas ran dry and the figure is too low. */
  readonly backlogLeft: number;
}

export interface ScaleOutResult {
  readonly delayMs: number;
  readonly backlog: number;
  readonly preload: ClosedLoopResult;
  readonly runs: readonly ScaleOutRun[];
}

/** Time each set of replicas runs before the window opens: pools connect, the first pulls arrive. */
const warmupMs = 1_500;

export async function runScaleOut(context: BenchContext): Promise<ScaleOutResult> {
  const { plan, system } = context;
  const most = Math.max(...plan.scaleReplicas);
  const all = Array.from({ length: most }, (_, index) => index);
  await system.stopMailers(all);
  await system.sink.setDelay(plan.scaleDelayMs);

  // Enough for every window at the best rate SMTP round trips allow (pool size / delay per replica), with room to spare.
  const bestPerReplica = (plan.smtpPoolSize * 1_000) / plan.scaleDelayMs;
  const replicaSeconds = plan.scaleReplicas.reduce((sum, replicas) => sum + replicas, 0) * (plan.scaleWindowS + warmupMs / 1_000 + 3);
  const backlog = Math.ceil(bestPerReplica * replicaSeconds * 1.3);
  context.progress(`scale-out: accepting a backlog of ${backlog.toLocaleString('en-US')} messages, sink delay ${plan.scaleDelayMs} ms`);
  const after = await lastMessageId(system.db);
  const preload = await runClosedLoop({ url: system.gatewayUrl, connections: plan.connections, amount: backlog, requests: closedLoopRequests(system.tenants) });
  requireAnswers(context, 'scale-out preload', preload);
  context.accepted += countOf(preload, 202);
  const range = { after, upTo: await lastMessageId(system.db) };

  const runs: ScaleOutRun[] = [];
  try {
    for (const replicas of plan.scaleReplicas) {
      const indexes = all.slice(0, replicas);
      context.progress(`scale-out: ${replicas} mailer replica${replicas === 1 ? '' : 's'} for ${plan.scaleWindowS} s`);
      await system.startMailers(indexes);
      await sleep(warmupMs);
      const storedBefore = await system.sink.received();
      const opened = performance.now();
      await sleep(plan.scaleWindowS * 1_000);
      const stored = (await system.sink.received()) - storedBefore;
      const windowS = (performance.now() - opened) / 1_000;
      const backlogLeft = (await deliveryState(system.db, range)).pending;
      await system.stopMailers(indexes);
      runs.push({ replicas, perSecond: stored / windowS, windowS, backlogLeft });
      context.progress(`  ${(stored / windowS).toFixed(1)}/s, ${backlogLeft} messages left`);
    }
  } finally {
    // What is left is delivered at full speed by one replica, which stays running for the final check.
    await system.sink.setDelay(0);
    await system.startMailers([0]);
  }
  return { delayMs: plan.scaleDelayMs, backlog, preload, runs };
}
