// The attempts log of one endpoint, as the sender recorded it (webhook_attempts), newest first a page at a time, and
// how each endpoint's deliveries went lately (its latest attempt and its latest failed one).
import type { Pool } from '@notify/platform/database';
import type { dispatch } from '@notify/proto';
import type { Queryable } from './endpoint-store.ts';

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
    text: `SELECT a.id, a.endpoint_id AS "endpointId", a.event_id AS "eventId", e.type AS "eventType", coalesce(e.message_id, 0) AS "messageId",
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

/** An endpoint's latest attempt and latest failed one, as the public API shows them (ApiWebhook). */
export interface DeliverySummary {
  readonly lastAttemptAt: string;
  readonly lastStatusCode: number;
  readonly lastSucceeded: boolean;
  readonly lastErrorAt: string;
  readonly lastErrorStatusCode: number;
  readonly lastError: string;
}

/** An endpoint never attempted yet. */
export const noAttempts: DeliverySummary = {
  lastAttemptAt: '',
  lastStatusCode: 0,
  lastSucceeded: false,
  lastErrorAt: '',
  lastErrorStatusCode: 0,
  lastError: '',
};

/** 2xx, as webhook-svc judges an answer (and as webhook_attempts_failed_idx's predicate states its opposite). */
const isSuccess = (status: number | null): boolean => status !== null && status >= 200 && status <= 299;

/**
 * The summary of each endpoint named: two index probes each (webhook_attempts_endpoint_idx for the latest attempt,
 * webhook_attempts_failed_idx for the latest failure), however long its log.
 */
export async function deliverySummaries(db: Queryable, endpointIds: readonly number[]): Promise<Map<number, DeliverySummary>> {
  const { rows } = await db.query<{
    endpointId: number;
    lastAttemptAt: Date | null;
    lastStatusCode: number | null;
    lastErrorAt: Date | null;
    lastErrorStatusCode: number | null;
    lastError: string | null;
  }>({
    name: 'webhook-delivery-summaries',
    text: `SELECT w.id AS "endpointId", last.attempted_at AS "lastAttemptAt", last.status_code AS "lastStatusCode",
                  failed.attempted_at AS "lastErrorAt", failed.status_code AS "lastErrorStatusCode", failed.error AS "lastError"
             FROM unnest($1::bigint[]) AS w (id)
             LEFT JOIN LATERAL (SELECT attempted_at, status_code FROM webhook_attempts a
                                 WHERE a.endpoint_id = w.id ORDER BY a.attempted_at DESC LIMIT 1) last ON true
             LEFT JOIN LATERAL (SELECT attempted_at, status_code, error FROM webhook_attempts a
                                 WHERE a.endpoint_id = w.id AND (a.status_code IS NULL OR a.status_code NOT BETWEEN 200 AND 299)
                                 ORDER BY a.attempted_at DESC LIMIT 1) failed ON true`,
    values: [endpointIds],
  });
  return new Map(
    rows.map((row) => [
      row.endpointId,
      row.lastAttemptAt === null
        ? noAttempts
        : {
            lastAttemptAt: row.lastAttemptAt.toISOString(),
            lastStatusCode: row.lastStatusCode ?? 0,
            lastSucceeded: isSuccess(row.lastStatusCode),
            lastErrorAt: row.lastErrorAt?.toISOString() ?? '',
            lastErrorStatusCode: row.lastErrorStatusCode ?? 0,
            lastError: row.lastError ?? '',
          },
    ]),
  );
}
