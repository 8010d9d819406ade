// The schedule: a row per scheduled message not yet due, holding its delivery job as accepted (docs/contract.md,
// "Message lifecycle"). The send path writes it in the message's transaction instead of an outbox row; the releaser
// moves due rows to the outbox (releaser.ts); a cancel deletes the row (cancel.ts). No row in the outbox, no job.
import { hash } from 'node:crypto';
import type { Pool, PoolClient } from '@notify/platform/database';
import type { DeliveryJob } from '@notify/proto';

export interface ScheduledJob {
  readonly job: DeliveryJob;
  readonly sendAt: Date;
}

export async function insertScheduledJobs(client: PoolClient, scheduled: readonly ScheduledJob[]): Promise<void> {
  await client.query({
    name: 'schedule-insert-many',
    text: 'INSERT INTO scheduled_messages (message_id, send_at, payload) SELECT * FROM unnest($1::bigint[], $2::timestamptz[], $3::jsonb[])',
    values: [scheduled.map(({ job }) => job.messageId), scheduled.map(({ sendAt }) => sendAt), scheduled.map(({ job }) => JSON.stringify(job))],
  });
}

/**
 * The releasers' advisory lock (one leader at a time): the first 8 bytes of SHA-256 over a name of its own, so it
 * never meets another advisory lock of the database (the idempotency keys', node-pg-migrate's).
 */
export const releaseLockKey = hash('sha256', 'notify.schedule:releaser', 'buffer').readBigInt64BE(0).toString();

/** A released message: its job, moved to the outbox, and the traceparent its publish continues. */
export interface ReleasedJob {
  readonly payload: DeliveryJob;
  readonly traceparent: string | null;
}

/**
 * Releases up to `limit` due messages, oldest send_at first, in the caller's transaction and one statement: each
 * leaves the schedule, moves `scheduled` → `queued` (the transition recorded), and gets its outbox row. Rows a cancel
 * holds are skipped (SKIP LOCKED) rather than waited for: the cancel wins or the next pass takes them.
 */
export async function releaseDue(client: PoolClient, limit: number): Promise<ReleasedJob[]> {
  const released = await client.query<ReleasedJob>({
    name: 'schedule-release',
    text: `WITH due AS (
             DELETE FROM scheduled_messages WHERE message_id IN (
               SELECT message_id FROM scheduled_messages WHERE send_at <= now() ORDER BY send_at LIMIT $1 FOR UPDATE SKIP LOCKED)
             RETURNING message_id, payload),
           queued AS (
             UPDATE messages m SET state = 'queued', updated_at = now() FROM due
              WHERE m.id = due.message_id AND m.state = 'scheduled'
             RETURNING m.id, m.traceparent),
           event AS (
             INSERT INTO message_events (message_id, state, attempt, occurred_at)
             SELECT id, 'queued', 0, now() FROM queued),
           outbox AS (
             INSERT INTO outbox (message_id, payload)
             SELECT due.message_id, due.payload FROM due JOIN queued ON queued.id = due.message_id)
           SELECT due.payload, queued.traceparent FROM due JOIN queued ON queued.id = due.message_id`,
    values: [limit],
  });
  return released.rows;
}

/** Scheduled messages not yet released (the backlog gauge). */
export async function countScheduled(pool: Pool): Promise<number> {
  const result = await pool.query<{ count: number }>({ name: 'schedule-count', text: 'SELECT count(*)::int AS count FROM scheduled_messages' });
  return result.rows[0]?.count ?? 0;
}
