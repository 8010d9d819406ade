// The management routes at saturation: one route's calls closed-loop over the plan's connections, with a key of the
// scope it needs, after a warm-up a few at a time (the first calls prepare statements and fill caches, which 64 at
// once would only queue behind). Calls per second, p50 / p99 and the CPU of every process per call; any answer but
// 200 fails the bench (the read rate limit, which these routes count against, is out of the way).
import { type ClosedLoopRequest, type ClosedLoopResult, runClosedLoop } from '../generators/closed-loop.ts';
import { countOf } from '../generators/load-result.ts';
import { cpuPerMessage } from '../system/cpu-usage.ts';
import type { BenchTenant } from '../system/system-under-test.ts';
import { type BenchContext, inWindow, requireAnswers } from './context.ts';
import { sendHeaders } from './send-requests.ts';

export interface ManagementCallsResult {
  readonly load: ClosedLoopResult;
  /** Calls answered 200: the divisor. */
  readonly calls: number;
  /** CPU milliseconds per call, per process group (see system/cpu-usage.ts). */
  readonly cpuPerCall: Record<string, number>;
}

/** The headers of a new key of `tenant`'s project holding `scopes`. */
export async function managementHeaders(context: BenchContext, tenant: BenchTenant, scopes: string[]): Promise<Record<string, string>> {
  const created = await context.system.authAdmin.call('CreateApiKey', { projectId: tenant.projectId, name: `bench ${scopes.join(' ')}`, scopes });
  return sendHeaders({ ...tenant, apiKey: created.apiKey });
}

export async function runManagementCalls(
  context: BenchContext,
  options: { readonly name: string; readonly requests: readonly ClosedLoopRequest[]; readonly amount: number },
): Promise<ManagementCallsResult> {
  const { plan, system } = context;
  const warmup = await runClosedLoop({ url: system.gatewayUrl, connections: 4, amount: 200, requests: options.requests });
  requireAnswers(context, `${options.name} warm-up`, warmup);
  const cpuBefore = await context.cpu();
  const load = await inWindow(context, options.name, () =>
    runClosedLoop({ url: system.gatewayUrl, connections: plan.connections, amount: options.amount, maxDurationS: 20, requests: options.requests }),
  );
  const cpuAfter = await context.cpu();
  requireAnswers(context, `${options.name} at saturation`, load);
  for (const run of [warmup, load]) {
    const other = Object.entries(run.statuses).filter(([status]) => status !== '200' && !status.startsWith('5'));
    if (other.length > 0) context.failures.push(`${options.name}: answers other than 200 (${JSON.stringify(Object.fromEntries(other))})`);
  }
  const calls = countOf(load, 200);
  context.progress(
    `  ${calls.toLocaleString('en-US')} calls, ${Math.round(load.answeredPerSecond).toLocaleString('en-US')}/s, p50 ${load.latencyMs.p50.toFixed(1)} ms, p99 ${load.latencyMs.p99.toFixed(1)} ms`,
  );
  return { load, calls, cpuPerCall: cpuPerMessage(cpuBefore, cpuAfter, calls) };
}
