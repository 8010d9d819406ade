// Monthly usage: messages accepted per organization per calendar month (UTC), the count a plan's quota applies to.
// The month is taken from the transaction's now(), the same instant the message's created_at records.
import type { Pool, PoolClient } from '@notify/platform/database';

/**
 * Counts one accepted message, in the transaction that accepts it, unless the organization already used up
 * `monthlyQuota` (0 = unlimited): false then, and nothing changes. The upsert locks the organization's row until the
 * transaction ends, so concurrent sends are counted one after the other and the quota is never overshot; the send path
 * calls this last, right before committing, to hold that lock as briefly as possible.
 */
export async function countAcceptedMessage(client: PoolClient, organizationId: number, monthlyQuota: number): Promise<boolean> {
  const result = await client.query({
    name: 'usage-count',
    text: `INSERT INTO organization_usage AS usage (organization_id, month, accepted)
           VALUES ($1, date_trunc('month', now() AT TIME ZONE 'UTC')::date, 1)
           ON CONFLICT (organization_id, month) DO UPDATE SET accepted = usage.accepted + 1
            WHERE $2::bigint = 0 OR usage.accepted < $2::bigint`,
    values: [organizationId, monthlyQuota],
  });
  return result.rowCount === 1;
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
