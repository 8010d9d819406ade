// Baseline of the ingest figure: the same requests, connections and load generator against a bare Koa endpoint. Its
// CPU per request (the server, the load generator and whatever else runs) is the same run's floor for the accept path's
// CPU per send: a send costs at least one such request. Then the same server at the paced runs' rate, open-loop: the
// floor of a request that arrives alone, what the paced rows (tracing, webhooks, end to end) pay per request for
// waking the processes it passes through, whatever they do once awake.
import { type ClosedLoopResult, runClosedLoop } from '../generators/closed-loop.ts';
import { type PacedLoadResult, runPaced } from '../generators/paced-load.ts';
import { startChild } from '../system/child.ts';
import { cpuPerMessage } from '../system/cpu-usage.ts';
import { type BenchContext, requireAnswers } from './context.ts';
import { closedLoopRequests, pacedRequests } from './send-requests.ts';

export interface CeilingResult {
  readonly load: ClosedLoopResult;
  /** 202 answers per second. */
  readonly perSecond: number;
  /** CPU milliseconds per 202 answer, per process group (see system/cpu-usage.ts); the server is `bare Koa`. */
  readonly cpuPerRequest: Record<string, number>;
  /** The same server at the paced runs' rate (`plan.tracingRate`), open-loop over the same sockets. */
  readonly paced?: PacedCeiling;
}

export interface PacedCeiling {
  readonly rate: number;
  readonly load: PacedLoadResult;
  /** CPU milliseconds per 202 answer, per process group, as at saturation. */
  readonly cpuPerRequest: Record<string, number>;
}

/** The helper label of the bare Koa server in the CPU figures. */
export const bareKoaLabel = 'bare Koa';

export async function runCeiling(context: BenchContext): Promise<CeilingResult> {
  const { plan, system } = context;
  context.progress(`HTTP ceiling: bare Koa, ${plan.connections} connections, ${plan.ceilingS} s`);
  const server = await startChild<{ port: number }>(new URL('../system/ceiling-server.ts', import.meta.url), []);
  const helpers = [[bareKoaLabel, server.pid]] as const;
  try {
    const before = await context.cpu(helpers);
    const load = await runClosedLoop({
      url: `http://127.0.0.1:${server.ready.port}`,
      connections: plan.connections,
      durationS: plan.ceilingS,
      requests: closedLoopRequests(system.tenants),
    });
    const answered = load.statuses['202'] ?? 0;
    const cpuPerRequest = cpuPerMessage(before, await context.cpu(helpers), answered);
    const perSecond = answered / load.durationS;
    context.progress(
      `  ${Math.round(perSecond)}/s, latency p50 ${load.latencyMs.p50} ms, p99 ${load.latencyMs.p99} ms, ${(cpuPerRequest['machine total'] ?? 0).toFixed(3)} ms of machine CPU per request`,
    );
    const rate = plan.tracingRate;
    context.progress(`HTTP ceiling at ${rate}/s, paced: bare Koa, ${plan.ceilingPacedS} s`);
    const pacedBefore = await context.cpu(helpers);
    const paced = await runPaced({
      url: `http://127.0.0.1:${server.ready.port}`,
      rate,
      durationS: plan.ceilingPacedS,
      connections: plan.connections,
      request: pacedRequests(system.tenants),
    });
    requireAnswers(context, `the ceiling at ${rate}/s`, paced);
    const pacedCpu = cpuPerMessage(pacedBefore, await context.cpu(helpers), paced.statuses['202'] ?? 0);
    context.progress(
      `  ${(pacedCpu['machine total'] ?? 0).toFixed(3)} ms of machine CPU per request, ${(pacedCpu[bareKoaLabel] ?? 0).toFixed(3)} ms of it the server's`,
    );
    return { load, perSecond, cpuPerRequest, paced: { rate, load: paced, cpuPerRequest: pacedCpu } };
  } finally {
    await server.stop();
  }
}
