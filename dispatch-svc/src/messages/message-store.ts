// The messages table as the send path writes it: one row per accepted message, plus its first recorded transition.
import type { PoolClient } from '@notify/platform/database';

export interface NewMessage {
  readonly projectId: number;
  readonly organizationId: number;
  readonly apiKeyId: number;
  readonly templateId: number;
  readonly templateSlug: string;
  readonly templateVersion: number;
  readonly recipient: string;
  readonly data: Record<string, unknown>;
  readonly celeryTaskId: string;
  readonly idempotencyKey: string | null;
  /** Of the message's create span (empty when there is no trace). */
  readonly traceparent: string;
  /** The caller's labels (docs/contract.md, "Tags and metadata"); `[]` and `{}` when it gave none. */
  readonly tags: readonly string[];
  readonly metadata: Readonly<Record<string, string>>;
  /** Sent with a test key: never mailed, never counted against the quota. */
  readonly test: boolean;
  /** A scheduled send's time: the message starts `scheduled` instead of `queued`. */
  readonly sendAt: Date | null;
  /** The send's From, null for MAIL_FROM (and its name, null for none). */
  readonly fromAddress: string | null;
  readonly fromName: string | null;
}

/**
 * Inserts the messages in state `queued` (`scheduled` with a send_at) and records that transition in message_events
 * (attempt 0), so a message's history starts where its life does. Returns each new id and the acceptance time, in the order given.
 */
export async function insertMessages(client: PoolClient, messages: readonly NewMessage[]): Promise<{ id: number; createdAt: Date }[]> {
  const column = <K extends keyof NewMessage>(key: K): NewMessage[K][] => messages.map((message) => message[key]);
  const result = await client.query<{ id: number; createdAt: Date; celeryTaskId: string }>({
    name: 'message-insert-many',
    text: `WITH message AS (
             INSERT INTO messages (project_id, organization_id, api_key_id, template_id, template_slug, template_version,
                                   recipient, data, celery_task_id, idempotency_key, traceparent, tags, metadata, test, send_at, state,
                                   from_address, from_name)
             -- Each message's tags travel as one JSON array: unnest would flatten an array of arrays.
             SELECT u.project_id, u.organization_id, u.api_key_id, u.template_id, u.template_slug, u.template_version, u.recipient,
                    u.data, u.celery_task_id, u.idempotency_key, u.traceparent, ARRAY(SELECT jsonb_array_elements_text(u.tags)), u.metadata,
                    u.test, u.send_at, u.state, u.from_address, u.from_name
               FROM unnest($1::bigint[], $2::bigint[], $3::bigint[], $4::bigint[], $5::text[], $6::integer[],
                           $7::text[], $8::jsonb[], $9::uuid[], $10::uuid[], $11::text[], $12::jsonb[], $13::jsonb[], $14::boolean[],
                           $15::timestamptz[], $16::message_state[], $17::text[], $18::text[])
                    AS u (project_id, organization_id, api_key_id, template_id, template_slug, template_version, recipient,
                          data, celery_task_id, idempotency_key, traceparent, tags, metadata, test, send_at, state,
                          from_address, from_name)
             RETURNING id, created_at, celery_task_id, state),
           event AS (
             INSERT INTO message_events (message_id, state, attempt, occurred_at)
             SELECT id, state, 0, created_at FROM message)
           SELECT id, created_at AS "createdAt", celery_task_id AS "celeryTaskId" FROM message`,
    values: [
      column('projectId'),
      column('organizationId'),
      column('apiKeyId'),
      column('templateId'),
      column('templateSlug'),
      column('templateVersion'),
      column('recipient'),
      messages.map((message) => JSON.stringify(message.data)),
      column('celeryTaskId'),
      column('idempotencyKey'),
      messages.map((message) => message.traceparent || null),
      messages.map((message) => JSON.stringify(message.tags)),
      messages.map((message) => JSON.stringify(message.metadata)),
      column('test'),
      column('sendAt'),
      messages.map((message) => (message.sendAt ? 'scheduled' : 'queued')),
      column('fromAddress'),
      column('fromName'),
    ],
  });
  // RETURNING promises no order: the task id, unique per message, puts each row back in its place.
  const byTask = new Map(result.rows.map((row) => [row.celeryTaskId, row]));
  return messages.map((message) => {
    const row = byTask.get(message.celeryTaskId);
    if (!row) throw new Error('INSERT ... RETURNING returned no row for a message');
    return { id: row.id, createdAt: row.createdAt };
  });
}

/**
 * Removes messages written earlier in the same transaction that it then refused (over quota), with their events,
 * idempotency records and outbox rows (their foreign keys cascade).
 */
export async function deleteMessages(client: PoolClient, ids: readonly number[]): Promise<void> {
  await client.query({ name: 'message-delete-many', text: 'DELETE FROM messages WHERE id = ANY($1::bigint[])', values: [ids] });
}
