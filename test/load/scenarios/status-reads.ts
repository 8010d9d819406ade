// Status reads: GET /api/v1/messages/{id}/ with the API key that sent the message, open-loop at the plan's fixed rate
// for a few seconds, with the system otherwise idle, then closed-loop over the plan's connections (saturation, the
// accept path's condition) for a number of reads. The ids are the latest messages of the first tenant, all delivered,
// so each answer carries the message and its transitions. The CPU of every process is counted over each run and
// divided by its reads answered 200; any other answer fails the bench (the read rate limit is raised out of the way,
// as the send rate is).
import { type ClosedLoopResult, runClosedLoop } from '../generators/closed-loop.ts';
import { countOf } from '../generators/load-result.ts';
import { type PacedLoadResult, type PacedRequest, runPaced } from '../generators/paced-load.ts';
import { cpuPerMessage } from '../system/cpu-usage.ts';
import { type BenchContext, inWindow, requireAnswers } from './context.ts';
import { sendHeaders } from './send-requests.ts';

export interface StatusReadResult {
  /** Requests per second offered. */
  readonly rate: number;
  /** Distinct messages the reads cycle through. */
  readonly messages: number;
  readonly load: PacedLoadResult;
  /** Reads answered 200: the divisor. */
  readonly reads: number;
  /** CPU milliseconds per read, per process group (see system/cpu-usage.ts). */
  readonly cpuPerRead: Record<string, number>;
  /** The closed-loop run: every request's fixed costs shared with the others in flight, as on the accept path. */
  readonly saturated: { readonly load: ClosedLoopResult; readonly reads: number; readonly cpuPerRead: Record<string, number> };
}

export async function runStatusReads(context: BenchContext): Promise<StatusReadResult> {
  const { plan, system } = context;
  const rate = plan.statusReadRate;
  const [tenant] = system.tenants;
  if (!tenant) throw new Error('no tenant');
  const { rows } = await system.db.query<{ id: number }>('SELECT id::int AS id FROM messages WHERE project_id = $1 ORDER BY id DESC LIMIT $2', [
    tenant.projectId,
    plan.statusReadMessages,
  ]);
  if (rows.length === 0) throw new Error('status reads: the first tenant has no message to read');
  const headers = sendHeaders(tenant);
  const empty = Buffer.alloc(0);
  const prepared = rows.map(({ id }): PacedRequest => ({ method: 'GET', path: `/api/v1/messages/${id}/`, headers, body: empty }));
  const request = (index: number): PacedRequest => prepared[index % prepared.length] as PacedRequest;
  const url = system.gatewayUrl;

  const warmup = await runPaced({ url, rate, durationS: plan.webhookWarmupS, connections: plan.connections, request });
  requireAnswers(context, 'status read warm-up', warmup);

  context.progress(`status reads: ${rate}/s for ${plan.statusReadS} s over ${rows.length.toLocaleString('en-US')} messages of one tenant`);
  const cpuBefore = await context.cpu();
  const load = await inWindow(context, 'status reads', () => runPaced({ url, rate, durationS: plan.statusReadS, connections: plan.connections, request }));
  const cpuAfter = await context.cpu();
  requireAnswers(context, 'status reads', load);
  const saturatedCpuBefore = await context.cpu();
  const saturatedLoad = await inWindow(context, 'status reads', () =>
    runClosedLoop({
      url,
      connections: plan.connections,
      amount: plan.statusReadsSaturated,
      maxDurationS: 10,
      requests: prepared.map(({ path }) => ({ method: 'GET', path, headers, body: '' })),
    }),
  );
  const saturatedCpuAfter = await context.cpu();
  requireAnswers(context, 'status reads at saturation', saturatedLoad);
  for (const run of [warmup, load, saturatedLoad]) {
    const other = Object.entries(run.statuses).filter(([status]) => status !== '200' && !status.startsWith('5'));
    if (other.length > 0) context.failures.push(`status reads: answers other than 200 (${JSON.stringify(Object.fromEntries(other))})`);
  }
  const reads = countOf(load, 200);
  const saturatedReads = countOf(saturatedLoad, 200);
  const result: StatusReadResult = {
    rate,
    messages: rows.length,
    load,
    reads,
    cpuPerRead: cpuPerMessage(cpuBefore, cpuAfter, reads),
    saturated: { load: saturatedLoad, reads: saturatedReads, cpuPerRead: cpuPerMessage(saturatedCpuBefore, saturatedCpuAfter, saturatedReads) },
  };
  context.progress(`  ${reads.toLocaleString('en-US')} reads, latency p50 ${load.latencyMs.p50.toFixed(1)} ms, p99 ${load.latencyMs.p99.toFixed(1)} ms`);
  context.progress(
    `  then closed-loop over ${plan.connections} connections: ${saturatedReads.toLocaleString('en-US')} reads, ${Math.round(saturatedLoad.answeredPerSecond).toLocaleString('en-US')}/s`,
  );
  return result;
}
