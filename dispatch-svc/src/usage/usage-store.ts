// Monthly usage: messages accepted per organization per calendar month (UTC), the count a plan's quota applies to.
// The month is taken from the transaction's now(), the same instant the message's created_at records.
import type { Pool, PoolClient } from '@notify/platform/database';

/** What the sends of one organization in a batch ask for: `wanted` messages under `monthlyQuota` (0 = unlimited). */
export interface UsageRequest {
  readonly organizationId: number;
  readonly wanted: number;
  readonly monthlyQuota: number;
}

/**
 * Counts up to `wanted` accepted messages per organization, in the transaction that accepts them, within what its
 * quota leaves (platform/migrations: notify_grant_usage); returns how many each organization was granted. Each row
 * stays locked until the transaction ends, so concurrent sends are counted one after the other and the quota is never
 * overshot; organizations are locked in id order, so two transactions never wait on each other in a cycle.
 */
export async function grantUsage(client: PoolClient, requests: readonly UsageRequest[]): Promise<Map<number, number>> {
  const ordered = [...requests].sort((a, b) => a.organizationId - b.organizationId);
  const result = await client.query<{ organizationId: number; granted: number }>({
    name: 'usage-grant',
    text: `SELECT wanted.organization_id AS "organizationId", notify_grant_usage(wanted.organization_id, wanted.count, wanted.quota) AS granted
             FROM unnest($1::bigint[], $2::integer[], $3::bigint[]) WITH ORDINALITY AS wanted(organization_id, count, quota, position)
            ORDER BY wanted.position`,
    values: [ordered.map((r) => r.organizationId), ordered.map((r) => r.wanted), ordered.map((r) => r.monthlyQuota)],
  });
  return new Map(result.rows.map((row) => [Number(row.organizationId), row.granted]));
}

export interface MonthUsage {
  /** "YYYY-MM", UTC. */
  readonly month: string;
  readonly accepted: number;
}

/** The organization's usage of the current month; 0 before its first message of the month. */
export async function currentMonthUsage(pool: Pool, organizationId: number): Promise<MonthUsage> {
  const result = await pool.query<MonthUsage>({
    name: 'usage-current',
    text: `SELECT to_char(current_month.month, 'YYYY-MM') AS month, coalesce(usage.accepted, 0) AS accepted
             FROM (SELECT date_trunc('month', now() AT TIME ZONE 'UTC')::date AS month) AS current_month
             LEFT JOIN organization_usage AS usage ON usage.organization_id = $1 AND usage.month = current_month.month`,
    values: [organizationId],
  });
  const row = result.rows[0];
  if (!row) throw new Error('the usage query returned no row');
  return row;
}
