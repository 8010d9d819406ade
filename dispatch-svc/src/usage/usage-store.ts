// Monthly usage: messages accepted per organization per calendar month (UTC), the count a plan's quota applies to.
// The month is taken from the transaction's now(), the same instant the message's created_at records.
import { batchRows, type Pool, type PoolClient, type RowColumn } from '@notify/platform/database';

/** What the sends of one organization in a batch ask for: `wanted` messages under `monthlyQuota` (0 = unlimited). */
export interface UsageRequest {
  readonly organizationId: number;
  readonly wanted: number;
  readonly monthlyQuota: number;
}

/** What one organization of a batch got: `granted` of the messages it wanted, and its month's count after them. */
export interface UsageGrant {
  readonly granted: number;
  /**
   * Messages the organization has accepted this month once these are counted. Exact when the quota cut the grant short
   * (the count is then the quota); otherwise the count as of the statement's start plus `granted`, which misses what a
   * concurrent transaction committed while this one waited for the row: a lower bound, for the gateway's check 5,
   * which the quota itself never relies on.
   */
  readonly accepted: number;
}

/** A request as the rows of the grant's statement (batchRows). */
const grantColumns: readonly RowColumn<UsageRequest>[] = [
  { type: 'bigint', value: (request) => request.organizationId },
  { type: 'integer', value: (request) => request.wanted },
  { type: 'bigint', value: (request) => request.monthlyQuota },
];

/**
 * Counts up to `wanted` accepted messages per organization, in the transaction that accepts them, within what its
 * quota leaves (platform/migrations: notify_grant_usage); returns what each organization was granted. Each row
 * stays locked until the transaction ends, so concurrent sends are counted one after the other and the quota is never
 * overshot; organizations are locked in id order, so two transactions never wait on each other in a cycle.
 */
export async function grantUsage(client: PoolClient, requests: readonly UsageRequest[]): Promise<Map<number, UsageGrant>> {
  const ordered = [...requests].sort((a, b) => a.organizationId - b.organizationId);
  // `before` is read with the statement's snapshot, so it never sees the function's own update (nor a concurrent one
  // committed after the statement started).
  const wanted = batchRows('usage-grant', ordered, grantColumns, { ordinality: true });
  const result = await client.query<{ organizationId: number; granted: number; before: number }>({
    name: wanted.name,
    text: `SELECT wanted.organization_id AS "organizationId", notify_grant_usage(wanted.organization_id, wanted.count, wanted.quota) AS granted,
                  coalesce(usage.accepted, 0)::bigint AS before
             FROM ${wanted.rows} AS wanted(organization_id, count, quota, position)
             LEFT JOIN organization_usage AS usage
                    ON usage.organization_id = wanted.organization_id AND usage.month = date_trunc('month', now() AT TIME ZONE 'UTC')::date
            ORDER BY wanted.position`,
    values: wanted.values,
  });
  const asked = new Map(ordered.map((request) => [request.organizationId, request]));
  return new Map(
    result.rows.map((row) => {
      const organizationId = Number(row.organizationId);
      const request = asked.get(organizationId);
      const cut = request !== undefined && row.granted < request.wanted;
      return [organizationId, { granted: row.granted, accepted: cut ? request.monthlyQuota : Number(row.before) + row.granted }];
    }),
  );
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
