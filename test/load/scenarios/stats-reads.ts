// Statistics reads: GET /api/v1/stats/ for a year by day, closed-loop over the plan's connections (saturation), each
// read summing 8,760 hour rows of the first tenant's project, written beforehand as a year of traffic would have left
// them (the counters of the bench's own sends are hours of today, a handful of rows). Requests per second, p99, and
// the CPU of every process per read; any answer but 200 fails the bench (the read rate limit is out of the way).
import { type ClosedLoopResult, runClosedLoop } from '../generators/closed-loop.ts';
import { countOf } from '../generators/load-result.ts';
import { cpuPerMessage } from '../system/cpu-usage.ts';
import { type BenchContext, inWindow, requireAnswers } from './context.ts';
import { sendHeaders } from './send-requests.ts';

export interface StatsReadResult {
  /** Hour rows each read sums. */
  readonly hourRows: number;
  readonly load: ClosedLoopResult;
  /** Reads answered 200: the divisor. */
  readonly reads: number;
  /** CPU milliseconds per read, per process group (see system/cpu-usage.ts). */
  readonly cpuPerRead: Record<string, number>;
}

/** The year read: 2025 by day, 365 buckets. */
const year = { from: '2025-01-01', to: '2026-01-01' };

export async function runStatsReads(context: BenchContext): Promise<StatsReadResult> {
  const { plan, system } = context;
  const [tenant] = system.tenants;
  if (!tenant) throw new Error('no tenant');
  const seeded = await system.db.query(
    `INSERT INTO message_stats (project_id, tag, hour, sent, delivered, deferred, bounced_hard, bounced_soft, complained, unsubscribed, failed)
     SELECT $1, '', hour, 40, 38, 3, 1, 1, 0, 0, 1
       FROM generate_series($2::timestamptz, $3::timestamptz - interval '1 hour', interval '1 hour') AS hour
     ON CONFLICT DO NOTHING`,
    [tenant.projectId, `${year.from}T00:00:00Z`, `${year.to}T00:00:00Z`],
  );
  await system.db.query('ANALYZE message_stats');
  const created = await system.authAdmin.call('CreateApiKey', { projectId: tenant.projectId, name: 'bench stats reader', scopes: ['stats:read'] });
  const headers = sendHeaders({ ...tenant, apiKey: created.apiKey });
  const path = `/api/v1/stats/?from=${year.from}&to=${year.to}&granularity=day`;

  context.progress(
    `stats reads: a year by day (${(seeded.rowCount ?? 0).toLocaleString('en-US')} hour rows), closed-loop over ${plan.connections} connections`,
  );
  // Warmed a few at a time: the first reads prepare statements and fill caches, which 64 at once would only queue behind.
  const warmup = await runClosedLoop({
    url: system.gatewayUrl,
    connections: 4,
    amount: 200,
    requests: [{ method: 'GET', path, headers, body: '' }],
  });
  requireAnswers(context, 'stats read warm-up', warmup);
  const cpuBefore = await context.cpu();
  const load = await inWindow(context, 'stats reads', () =>
    runClosedLoop({
      url: system.gatewayUrl,
      connections: plan.connections,
      amount: plan.statsReadsSaturated,
      maxDurationS: 20,
      requests: [{ method: 'GET', path, headers, body: '' }],
    }),
  );
  const cpuAfter = await context.cpu();
  requireAnswers(context, 'stats reads at saturation', load);
  for (const run of [warmup, load]) {
    const other = Object.entries(run.statuses).filter(([status]) => status !== '200' && !status.startsWith('5'));
    if (other.length > 0) context.failures.push(`stats reads: answers other than 200 (${JSON.stringify(Object.fromEntries(other))})`);
  }
  const reads = countOf(load, 200);
  context.progress(
    `  ${reads.toLocaleString('en-US')} reads, ${Math.round(load.answeredPerSecond).toLocaleString('en-US')}/s, p50 ${load.latencyMs.p50.toFixed(1)} ms, p99 ${load.latencyMs.p99.toFixed(1)} ms`,
  );
  return { hourRows: seeded.rowCount ?? 0, load, reads, cpuPerRead: cpuPerMessage(cpuBefore, cpuAfter, reads) };
}
