// Expired idempotency records are deleted in the background; the send path also replaces an expired record it meets,
// but keys that are never reused would otherwise stay forever.
import type { Pool } from '@notify/platform/database';

/** Deletes expired records in bounded batches (short transactions, no long lock on the table); returns how many. */
export async function sweepExpiredIdempotencyRecords(pool: Pool, batchSize = 1_000): Promise<number> {
  let deleted = 0;
  for (;;) {
    const result = await pool.query({
      name: 'idempotency-sweep',
      text: `DELETE FROM idempotency_keys WHERE (project_id, idempotency_key) IN (
               SELECT project_id, idempotency_key FROM idempotency_keys WHERE expires_at <= now()
                LIMIT $1 FOR UPDATE SKIP LOCKED)`,
      values: [batchSize],
    });
    deleted += result.rowCount ?? 0;
    if ((result.rowCount ?? 0) < batchSize) return deleted;
  }
}
