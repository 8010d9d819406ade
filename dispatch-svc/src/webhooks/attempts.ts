// The attempts log of one endpoint, as the sender recorded it (webhook_attempts), newest first a page at a time.
import type { Pool } from '@notify/platform/database';
import type { dispatch } from '@notify/proto';

/** What the log shows of a response: its first KiB, as the contract's panel promises. */
const shownBodyCharacters = 1_024;

interface AttemptRow {
  readonly id: number;
  readonly endpointId: number;
  readonly eventId: number;
  readonly eventType: string;
  readonly messageId: number;
  readonly attempt: number;
  readonly attemptedAt: Date;
  readonly statusCode: number | null;
  readonly latencyMs: number;
  readonly responseBody: string | null;
  readonly error: string | null;
}

/** The webhook-id header of an event: stable across every attempt and replay of it. */
export const webhookId = (eventId: number): string => `evt_${eventId}`;

export async function listAttempts(
  pool: Pool,
  query: { endpointId: number; messageId: number; limit: number; beforeId: number },
): Promise<dispatch.ListWebhookAttemptsResponse__Output> {
  const result = await pool.query<AttemptRow>({
    name: 'webhook-attempts-list',
    text: `SELECT a.id, a.endpoint_id AS "endpointId", a.event_id AS "eventId", e.type AS "eventType", e.message_id AS "messageId",
                  a.attempt, a.attempted_at AS "attemptedAt", a.status_code AS "statusCode", a.latency_ms AS "latencyMs",
                  left(a.response_body, ${shownBodyCharacters}) AS "responseBody", a.error
             FROM webhook_attempts a JOIN webhook_events e ON e.id = a.event_id
            WHERE a.endpoint_id = $1 AND ($2::bigint = 0 OR e.message_id = $2) AND ($3::bigint = 0 OR a.id < $3)
            ORDER BY a.id DESC
            LIMIT $4`,
    values: [query.endpointId, query.messageId, query.beforeId, query.limit + 1],
  });
  const rows = result.rows.slice(0, query.limit);
  const last = rows.at(-1);
  return {
    attempts: rows.map((row) => ({
      id: row.id,
      endpointId: row.endpointId,
      eventId: row.eventId,
      webhookId: webhookId(row.eventId),
      eventType: row.eventType,
      messageId: row.messageId,
      attempt: row.attempt,
      attemptedAt: row.attemptedAt.toISOString(),
      statusCode: row.statusCode ?? 0,
      latencyMs: row.latencyMs,
      responseBody: row.responseBody ?? '',
      error: row.error ?? '',
    })),
    nextBeforeId: result.rows.length > query.limit && last ? last.id : 0,
  };
}
