// The outbox table: a row per delivery job that JetStream has not confirmed yet, written in the message's transaction.

import { batchRows, type Pool, type PoolClient, type RowColumn } from '@notify/platform/database';
import type { DeliveryJob } from '@notify/proto';

export async function insertOutboxRows(client: PoolClient, jobs: readonly DeliveryJob[]): Promise<void> {
  await client.query({
    name: 'outbox-insert-many',
    text: 'INSERT INTO outbox (message_id, payload) SELECT * FROM unnest($1::bigint[], $2::jsonb[])',
    values: [jobs.map((job) => job.messageId), jobs.map((job) => JSON.stringify(job))],
  });
}

/**
 * The outbox row of a new delivery of a message (a re-queued dead letter). It replaces a row the earlier delivery may
 * have left behind (published, but its delete failed), so the relay only ever publishes the current delivery.
 */
export async function replaceOutboxRow(client: PoolClient, job: DeliveryJob): Promise<void> {
  await client.query({
    name: 'outbox-replace',
    text: `INSERT INTO outbox (message_id, payload) VALUES ($1, $2)
           ON CONFLICT (message_id) DO UPDATE SET payload = EXCLUDED.payload, created_at = now(), attempts = 0, last_error = NULL`,
    values: [job.messageId, JSON.stringify(job)],
  });
}

const messageIdColumns: readonly RowColumn<number>[] = [{ type: 'bigint', value: (messageId) => messageId }];

/**
 * Called once JetStream confirmed the jobs; deleting nothing (the relay got there first) is fine. A short batch is
 * padded with message id 0, which no row has (platform batchRows).
 */
export async function deleteOutboxRows(db: Pool | PoolClient, messageIds: readonly number[]): Promise<void> {
  const confirmed = batchRows('outbox-delete-many', messageIds, messageIdColumns, { filler: 0 });
  await db.query({
    name: confirmed.name,
    text: `DELETE FROM outbox o USING ${confirmed.rows} AS confirmed (message_id) WHERE o.message_id = confirmed.message_id`,
    values: confirmed.values,
  });
}

export async function countOutboxRows(pool: Pool): Promise<number> {
  const result = await pool.query<{ count: number }>('SELECT count(*)::int AS count FROM outbox');
  return result.rows[0]?.count ?? 0;
}
