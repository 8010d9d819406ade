// The outbox table: a row per delivery job that JetStream has not confirmed yet, written in the message's transaction.
import type { DeliveryJob } from '@notify/proto';
import type { Pool, PoolClient } from '@notify/platform/database';
import type { QueuedJob } from './delivery-job.ts';

export async function insertOutboxRow(client: PoolClient, job: DeliveryJob): Promise<void> {
  await client.query({
    name: 'outbox-insert',
    text: 'INSERT INTO outbox (message_id, payload) VALUES ($1, $2)',
    values: [job.messageId, JSON.stringify(job)],
  });
}

/**
 * The outbox row of a new delivery of a message (a re-queued dead letter). It replaces a row the earlier delivery may
 * have left behind (published, but its delete failed), so the relay only ever publishes the current delivery.
 */
export async function replaceOutboxRow(client: PoolClient, job: QueuedJob): Promise<void> {
  await client.query({
    name: 'outbox-replace',
    text: `INSERT INTO outbox (message_id, payload) VALUES ($1, $2)
           ON CONFLICT (message_id) DO UPDATE SET payload = EXCLUDED.payload, created_at = now(), attempts = 0, last_error = NULL`,
    values: [job.messageId, JSON.stringify(job)],
  });
}

/** Called once JetStream confirmed the job; deleting nothing (the relay got there first) is fine. */
export async function deleteOutboxRow(pool: Pool, messageId: number): Promise<void> {
  await pool.query({ name: 'outbox-delete', text: 'DELETE FROM outbox WHERE message_id = $1', values: [messageId] });
}

export async function countOutboxRows(pool: Pool): Promise<number> {
  const result = await pool.query<{ count: number }>('SELECT count(*)::int AS count FROM outbox');
  return result.rows[0]?.count ?? 0;
}
