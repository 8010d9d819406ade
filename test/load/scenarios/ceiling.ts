// Baseline of the ingest figure: the same requests, connections and load generator against a bare Koa endpoint.
import { runClosedLoop, type ClosedLoopResult } from '../generators/closed-loop.ts';
import { startChild } from '../system/child.ts';
import type { BenchContext } from './context.ts';
import { closedLoopRequests } from './send-requests.ts';

export interface CeilingResult {
  readonly load: ClosedLoopResult;
  /** 202 answers per second. */
  readonly perSecond: number;
}

export async function runCeiling(context: BenchContext): Promise<CeilingResult> {
  const { plan, system } = context;
  context.progress(`HTTP ceiling: bare Koa, ${plan.connections} connections, ${plan.ceilingS} s`);
  const server = await startChild<{ port: number }>(new URL('../system/ceiling-server.ts', import.meta.url), []);
  try {
    const load = await runClosedLoop({
      url: `http://127.0.0.1:${server.ready.port}`,
      connections: plan.connections,
      durationS: plan.ceilingS,
      requests: closedLoopRequests(system.tenants),
    });
    const perSecond = (load.statuses['202'] ?? 0) / load.durationS;
    context.progress(`  ${Math.round(perSecond)}/s, latency p50 ${load.latencyMs.p50} ms, p99 ${load.latencyMs.p99} ms`);
    return { load, perSecond };
  } finally {
    await server.stop();
  }
}
