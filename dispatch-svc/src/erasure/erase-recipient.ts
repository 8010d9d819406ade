// The right to be forgotten for one recipient of one project (docs/operations.md, "Erasure"): every copy of the
// address in the project's rows is replaced by a marker, the recipient's `data` is emptied, and what billing and
// statistics count (the messages, their states, attempts and times) stays. One transaction: an erasure is all or nothing.
import { type Pool, type PoolClient, withTransaction } from '@notify/platform/database';
import type { DataKey } from '@notify/platform/mail';
import type { DeliveryEvent } from '@notify/proto';
import { erasedAddress } from '../suppressions/suppression-store.ts';

/**
 * What an erased recipient becomes: still an address (the status API, the panel and the list filters keep their
 * shape), in the `.invalid` top-level domain (RFC 2606), so nothing can ever be mailed to it.
 */
export const erasedRecipient = 'erased@erased.invalid';

/** Rows changed, per table. */
export interface Erasure {
  readonly messages: number;
  readonly canceled: number;
  readonly events: number;
  readonly outbox: number;
  readonly webhookEvents: number;
  readonly webhookAttempts: number;
  readonly idempotencyRecords: number;
  readonly suppressions: number;
}

/**
 * The address as a PostgreSQL regular expression matching itself literally: every character that is not a letter or a
 * digit escaped (in an ARE, a backslash before any other character makes it an ordinary one).
 */
export function literalPattern(address: string): string {
  return address.replace(/[^\p{L}\p{N}]/gu, '\\$&');
}

/** Anything shaped like an address: what a relay or a report may quote of the recipient. */
const addressLike = /[^\s<>"'(),;:[\]]+@[^\s<>"'(),;:[\]]+/g;

/** A text recorded about an erased message after its erasure, with every address in it replaced by the marker. */
export const withoutAddresses = (text: string): string => text.replace(addressLike, erasedRecipient);

/**
 * A delivery event of a message erased while its job was under way (the job still held the address): the relay's
 * reply and the reason are recorded with every address in them replaced by the marker, as the erasure would have.
 */
export function scrubbedEvent(event: DeliveryEvent): DeliveryEvent {
  return {
    ...event,
    ...(event.smtpResponse === undefined ? {} : { smtpResponse: withoutAddresses(event.smtpResponse) }),
    ...(event.reason === undefined ? {} : { reason: withoutAddresses(event.reason) }),
  };
}

/** Every copy of the address in `expression` (text), case-insensitively, replaced by the marker. */
const scrubbed = (expression: string): string => `regexp_replace(${expression}, $2, '${erasedRecipient}', 'gi')`;

export async function eraseRecipient(pool: Pool, dataKey: DataKey, projectId: number, address: string): Promise<Erasure> {
  return withTransaction(pool, async (client) => {
    const canceled = await cancelScheduled(client, projectId, address);
    // Locked before they change, so a delivery event recorded meanwhile waits for the erasure (and finds the marker).
    const locked = await client.query<{ id: string }>({
      name: 'erasure-lock-messages',
      text: 'SELECT id FROM messages WHERE project_id = $1 AND lower(recipient) = lower($2) ORDER BY id FOR UPDATE',
      values: [projectId, address],
    });
    const ids = locked.rows.map((row) => row.id);
    const byIds = [ids, literalPattern(address)];
    const messages = await count(
      client,
      'erasure-messages',
      byIds,
      `UPDATE messages SET recipient = '${erasedRecipient}', data = '{}',
              last_smtp_response = ${scrubbed('last_smtp_response')}, failure_reason = ${scrubbed('failure_reason')},
              tags = ARRAY(SELECT ${scrubbed('tag')} FROM unnest(tags) WITH ORDINALITY AS each (tag, position) ORDER BY position),
              metadata = ${scrubbed('metadata::text')}::jsonb
        WHERE id = ANY($1::bigint[])`,
    );
    const events = await count(
      client,
      'erasure-events',
      byIds,
      `UPDATE message_events SET smtp_response = ${scrubbed('smtp_response')}, reason = ${scrubbed('reason')}
        WHERE message_id = ANY($1::bigint[]) AND (smtp_response ~* $2 OR reason ~* $2)`,
    );
    // A job not yet published: the mailer gets the marker and empty data, like everything else.
    const outbox = await count(
      client,
      'erasure-outbox',
      byIds,
      `UPDATE outbox SET payload = jsonb_set(${scrubbed('payload::text')}::jsonb, '{data}', '{}'), last_error = ${scrubbed('last_error')}
        WHERE message_id = ANY($1::bigint[])`,
    );
    const webhookEvents = await count(
      client,
      'erasure-webhook-events',
      byIds,
      `UPDATE webhook_events SET payload = ${scrubbed('payload::text')}::jsonb WHERE message_id = ANY($1::bigint[]) AND payload::text ~* $2`,
    );
    // A receiver may echo the body it was sent.
    const webhookAttempts = await count(
      client,
      'erasure-webhook-attempts',
      byIds,
      `UPDATE webhook_attempts SET response_body = ${scrubbed('response_body')}, error = ${scrubbed('error')}
        WHERE event_id IN (SELECT id FROM webhook_events WHERE message_id = ANY($1::bigint[])) AND (response_body ~* $2 OR error ~* $2)`,
    );
    const idempotencyRecords = await count(
      client,
      'erasure-idempotency',
      byIds,
      `UPDATE idempotency_keys SET response = ${scrubbed('response::text')}::jsonb WHERE message_id = ANY($1::bigint[]) AND response::text ~* $2`,
    );
    const suppressions = await hashSuppressions(client, dataKey, projectId, address);
    return { messages, canceled, events, outbox, webhookEvents, webhookAttempts, idempotencyRecords, suppressions };
  });
}

async function count(client: PoolClient, name: string, values: unknown[], text: string): Promise<number> {
  return (await client.query({ name, text, values })).rowCount ?? 0;
}

/**
 * Scheduled sends to the address are canceled: nothing is mailed to someone who asked to be forgotten. Their schedule
 * rows are taken first, in the releaser's and cancel.ts's order, so an erasure and a release never deadlock.
 */
async function cancelScheduled(client: PoolClient, projectId: number, address: string): Promise<number> {
  const result = await client.query({
    name: 'erasure-cancel-scheduled',
    text: `WITH unscheduled AS (
             DELETE FROM scheduled_messages s USING messages m
              WHERE s.message_id = m.id AND m.project_id = $1 AND lower(m.recipient) = lower($2)
             RETURNING m.id),
           canceled AS (UPDATE messages SET state = 'canceled', updated_at = now() WHERE id IN (SELECT id FROM unscheduled) RETURNING id, updated_at)
           INSERT INTO message_events (message_id, state, attempt, reason, occurred_at) SELECT id, 'canceled', 0, 'canceled by an erasure', updated_at FROM canceled`,
    values: [projectId, address],
  });
  return result.rowCount ?? 0;
}

/**
 * The project's entries for the address (any case) are replaced by their hash with the same reason, time and cause,
 * so the address stays refused; an entry whose hash is already there (suppressed again after an erasure) just goes.
 */
async function hashSuppressions(client: PoolClient, dataKey: DataKey, projectId: number, address: string): Promise<number> {
  const entries = await client.query<{ address: string }>({
    name: 'erasure-suppressions',
    text: 'SELECT address FROM suppressions WHERE project_id = $1 AND lower(address) = lower($2) FOR UPDATE',
    values: [projectId, address],
  });
  for (const entry of entries.rows) {
    await client.query({
      name: 'erasure-hash-suppression',
      text: `WITH kept AS (
               INSERT INTO suppressions (project_id, address, reason, message_id, created_at)
               SELECT project_id, $3, reason, message_id, created_at FROM suppressions WHERE project_id = $1 AND address = $2
               ON CONFLICT (project_id, address) DO NOTHING)
             DELETE FROM suppressions WHERE project_id = $1 AND address = $2`,
      values: [projectId, entry.address, erasedAddress(dataKey, projectId, entry.address)],
    });
  }
  return entries.rowCount ?? 0;
}
