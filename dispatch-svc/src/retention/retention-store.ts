// The retention purge's statements (docs/operations.md, "Retention"): which messages are past their organization's
// retention, the batch that deletes them with every row that references them, and what the gauges read.
import { hash } from 'node:crypto';
import type { Pool, PoolClient } from '@notify/platform/database';

/**
 * The purge's advisory lock (one leader at a time): the first 8 bytes of SHA-256 over a name of its own, so it never
 * meets another advisory lock of the database (the releaser's, the idempotency keys', node-pg-migrate's).
 */
export const purgeLockKey = hash('sha256', 'notify.retention:purge', 'buffer').readBigInt64BE(0).toString();

/**
 * The tables a purged message's rows are deleted from, the message last. scheduled_messages is not among them: a
 * message leaves it when it is released or canceled, before it can be final (its foreign key cascades all the same).
 * suppressions keep their entry with message_id set to NULL by its foreign key: the address must stay suppressed after
 * the message that caused it is gone.
 */
export const purgedTables = ['message_events', 'outbox', 'idempotency_keys', 'webhook_attempts', 'webhook_deliveries', 'webhook_events', 'messages'] as const;
export type PurgedTable = (typeof purgedTables)[number];
export type PurgedRows = Record<PurgedTable, number>;

/** The tables whose size the gauges report: the ones that grow with every message. */
export const measuredTables = [...purgedTables, 'scheduled_messages'] as const;

/** An organization and the retention its messages are kept for, in hours (its own, or the deployment's). */
export interface OrganizationRetention {
  readonly organizationId: number;
  readonly retentionHours: number;
}

export async function organizationRetentions(pool: Pool, defaultHours: number): Promise<OrganizationRetention[]> {
  const { rows } = await pool.query<OrganizationRetention>({
    name: 'retention-organizations',
    text: 'SELECT id::int AS "organizationId", COALESCE(message_retention_hours, $1)::int AS "retentionHours" FROM organizations ORDER BY id',
    values: [defaultHours],
  });
  return rows;
}

/** The batch statement ($1 organization, $2 retention in hours, $3 limit), exported for its EXPLAIN test. */
export const purgeBatchSql = `WITH doomed AS (
    SELECT array_agg(id) AS ids FROM (
      SELECT id FROM messages
       WHERE organization_id = $1 AND state IN ('sent', 'failed', 'canceled', 'bounced', 'complained')
         AND updated_at < now() - make_interval(hours => $2)
       ORDER BY updated_at LIMIT $3 FOR UPDATE SKIP LOCKED) candidates),
  purged_message_events AS (DELETE FROM message_events WHERE message_id = ANY((SELECT ids FROM doomed)::bigint[]) RETURNING 1),
  purged_outbox AS (DELETE FROM outbox WHERE message_id = ANY((SELECT ids FROM doomed)::bigint[]) RETURNING 1),
  purged_idempotency_keys AS (DELETE FROM idempotency_keys WHERE message_id = ANY((SELECT ids FROM doomed)::bigint[]) RETURNING 1),
  purged_webhook_events AS (DELETE FROM webhook_events WHERE message_id = ANY((SELECT ids FROM doomed)::bigint[]) RETURNING id),
  purged_webhook_attempts AS (DELETE FROM webhook_attempts WHERE event_id = ANY(ARRAY(SELECT id FROM purged_webhook_events)) RETURNING 1),
  purged_webhook_deliveries AS (DELETE FROM webhook_deliveries WHERE event_id = ANY(ARRAY(SELECT id FROM purged_webhook_events)) RETURNING 1),
  purged_messages AS (DELETE FROM messages WHERE id = ANY((SELECT ids FROM doomed)::bigint[]) RETURNING 1)
  SELECT ${purgedTables.map((table) => `(SELECT count(*) FROM purged_${table})::int AS ${table}`).join(', ')}`;

/**
 * Deletes up to `limit` of the organization's messages in a final state whose last change is older than its retention,
 * oldest first, with every row that references them, in the caller's transaction and one statement. The candidates are
 * read in the order of messages_retention_idx (the state list must stay the index's predicate, word for word, for the
 * planner to use it); a message another transaction holds (an event applying to it) is skipped, not waited for. The
 * deletes take the candidates as one array (`= ANY`), so each is an index lookup per id rather than a join the
 * planner could choose to answer with a scan of the table.
 */
export async function purgeBatch(client: PoolClient, { organizationId, retentionHours }: OrganizationRetention, limit: number): Promise<PurgedRows> {
  const { rows } = await client.query<PurgedRows>({
    name: 'retention-purge-batch',
    text: purgeBatchSql,
    values: [organizationId, retentionHours, limit],
  });
  return rows[0] as PurgedRows;
}

/** An organization's retention beside the age of its oldest kept final message; organizations without one are left out. */
export interface OldestKept extends OrganizationRetention {
  readonly oldestFinalAgeSeconds: number;
}

/** One index probe per organization (messages_retention_idx, first entry): cheap however many messages each has. */
export async function oldestKeptFinalMessages(client: PoolClient, defaultHours: number): Promise<OldestKept[]> {
  const { rows } = await client.query<OldestKept>({
    name: 'retention-oldest-kept',
    text: `SELECT * FROM (
             SELECT o.id::int AS "organizationId", COALESCE(o.message_retention_hours, $1)::int AS "retentionHours",
                    (SELECT extract(epoch FROM now() - m.updated_at)::float8 FROM messages m
                      WHERE m.organization_id = o.id AND m.state IN ('sent', 'failed', 'canceled', 'bounced', 'complained')
                      ORDER BY m.updated_at LIMIT 1) AS "oldestFinalAgeSeconds"
               FROM organizations o) kept
            WHERE "oldestFinalAgeSeconds" IS NOT NULL`,
    values: [defaultHours],
  });
  return rows;
}

/** Each measured table's size on disk, indexes and TOAST included (pg_total_relation_size). */
export async function tableSizes(client: PoolClient): Promise<Array<{ table: string; bytes: number }>> {
  const { rows } = await client.query<{ table: string; bytes: number }>({
    name: 'retention-table-sizes',
    text: 'SELECT t AS table, pg_total_relation_size(to_regclass(t))::float8 AS bytes FROM unnest($1::text[]) t',
    values: [measuredTables],
  });
  return rows;
}
