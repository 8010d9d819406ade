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
}

/**
 * Inserts the message in state `queued` and records that transition in message_events (attempt 0), so a message's
 * history starts where its life does. Returns the new id and the acceptance time.
 */
export async function insertMessage(client: PoolClient, message: NewMessage): Promise<{ id: number; createdAt: Date }> {
  const result = await client.query<{ id: number; createdAt: Date }>({
    name: 'message-insert',
    text: `WITH message AS (
             INSERT INTO messages (project_id, organization_id, api_key_id, template_id, template_slug, template_version,
                                   recipient, data, celery_task_id, idempotency_key)
             VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)
             RETURNING id, created_at)
           INSERT INTO message_events (message_id, state, attempt, occurred_at)
           SELECT id, 'queued', 0, created_at FROM message
           RETURNING message_id AS id, occurred_at AS "createdAt"`,
    values: [
      message.projectId,
      message.organizationId,
      message.apiKeyId,
      message.templateId,
      message.templateSlug,
      message.templateVersion,
      message.recipient,
      JSON.stringify(message.data),
      message.celeryTaskId,
      message.idempotencyKey,
    ],
  });
  const row = result.rows[0];
  if (!row) throw new Error('INSERT ... RETURNING returned no row');
  return row;
}
