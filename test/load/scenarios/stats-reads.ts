// Statistics reads: GET /api/v1/stats/ for a year by day at saturation (management-calls.ts), each read summing 8,760
// hour rows of the first tenant's project, written beforehand as a year of traffic would have left them (the counters
// of the bench's own sends are hours of today, a handful of rows).
import type { BenchContext } from './context.ts';
import { type ManagementCallsResult, managementHeaders, runManagementCalls } from './management-calls.ts';

export interface StatsReadResult extends ManagementCallsResult {
  /** Hour rows each read sums. */
  readonly hourRows: number;
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
  const headers = await managementHeaders(context, tenant, ['stats:read']);
  const path = `/api/v1/stats/?from=${year.from}&to=${year.to}&granularity=day`;
  context.progress(
    `stats reads: a year by day (${(seeded.rowCount ?? 0).toLocaleString('en-US')} hour rows), closed-loop over ${plan.connections} connections`,
  );
  const result = await runManagementCalls(context, {
    name: 'stats reads',
    requests: [{ method: 'GET', path, headers, body: '' }],
    amount: plan.statsReadsSaturated,
  });
  return { ...result, hourRows: seeded.rowCount ?? 0 };
}
