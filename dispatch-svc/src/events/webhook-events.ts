// Webhook events, written in the transaction that applies the state changes they report (so no crash loses one): a
// webhook_events row per transition that maps to a type, when the project has an enabled endpoint subscribed to it,
// and a pending webhook_deliveries row per such endpoint. The webhook relay publishes them (webhook-relay.ts).
import { batchRows, type PoolClient, type RowColumn } from '@notify/platform/database';
import type { DeliveryEvent, DeliveryState } from '@notify/proto';

/** The webhook event type of each state that has one (CONTRACT.md, "Webhooks"); `sending` has none. */
export const webhookTypes: Partial<Record<DeliveryState, string>> = { sent: 'message.sent', deferred: 'message.deferred', failed: 'message.failed' };

/** What one webhook event reports about one message: the body's `data` besides what the message row holds. */
export interface WebhookEventFacts {
  readonly messageId: number;
  /** One of endpoint-rules.ts's webhookEventTypes. */
  readonly type: string;
  /** The message's state the event reports (`status` in the body). */
  readonly state: string;
  readonly attempt: number;
  readonly smtpCode?: number | undefined;
  readonly smtpResponse?: string | undefined;
  readonly reason?: string | undefined;
  /** RFC 3339. */
  readonly occurredAt: string;
}

/**
 * Records the webhook events of `applied`: the events that moved their message, in the order they were applied. The
 * messages are locked by the caller, so each one's `sequence` continues from its last recorded event without a race.
 * Returns how many events were recorded.
 */
export async function recordWebhookEvents(client: PoolClient, applied: readonly DeliveryEvent[]): Promise<number> {
  return recordMessageWebhookEvents(
    client,
    applied.flatMap((event) => {
      const type = webhookTypes[event.state];
      return type === undefined ? [] : [{ ...event, type }];
    }),
  );
}

type OrderedEvent = WebhookEventFacts & {
  /** The event's position among the batch's events of its message (1, 2, ...): its sequence continues the last by it. */
  readonly ordinal: number;
};

const recordColumns: readonly RowColumn<OrderedEvent>[] = [
  { type: 'bigint', value: (event) => event.messageId },
  { type: 'text', value: (event) => event.type },
  { type: 'text', value: (event) => event.state },
  { type: 'integer', value: (event) => event.attempt },
  { type: 'integer', value: (event) => event.smtpCode ?? null },
  { type: 'text', value: (event) => event.smtpResponse ?? null },
  { type: 'text', value: (event) => event.reason ?? null },
  { type: 'timestamptz', value: (event) => event.occurredAt },
  { type: 'integer', value: (event) => event.ordinal },
];

/**
 * Pads a short batch (platform batchRows): the statement writes only the events of messages that exist (it joins
 * messages), and no message has id 0, so the filler records nothing.
 */
const noEvent: OrderedEvent = { messageId: 0, type: '', state: '', attempt: 0, occurredAt: new Date(0).toISOString(), ordinal: 0 };

/**
 * Records webhook events of any type (a delivery transition, a report, an unsubscribe), in order, for the endpoints of
 * each message's project subscribed to them. Same contract as recordWebhookEvents: the caller holds the messages'
 * locks; a message that no longer exists gets none. Returns how many events were recorded.
 */
export async function recordMessageWebhookEvents(client: PoolClient, typed: readonly WebhookEventFacts[]): Promise<number> {
  if (typed.length === 0) return 0;
  const order = new Map<number, number>();
  const ordered = typed.map((event) => {
    const ordinal = (order.get(event.messageId) ?? 0) + 1;
    order.set(event.messageId, ordinal);
    return { ...event, ordinal };
  });
  const recorded = batchRows('webhook-events-record', ordered, recordColumns, { filler: noEvent });
  const result = await client.query({
    name: recorded.name,
    text: `WITH t AS (
             SELECT * FROM ${recorded.rows} AS t (message_id, type, status, attempt, smtp_code, smtp_response, reason, occurred_at, ordinal)
           ), due AS (
             SELECT t.*, m.project_id, m.recipient, m.template_slug, m.celery_task_id, m.tags, m.metadata,
                    coalesce((SELECT max(e.sequence) FROM webhook_events e WHERE e.message_id = t.message_id), 0) + t.ordinal AS sequence
               FROM t JOIN messages m ON m.id = t.message_id
              WHERE EXISTS (SELECT 1 FROM webhook_endpoints w WHERE w.project_id = m.project_id AND w.enabled AND t.type = ANY (w.event_types))
           ), events AS (
             INSERT INTO webhook_events (project_id, message_id, type, sequence, payload)
             SELECT project_id, message_id, type, sequence,
                    jsonb_build_object('type', type, 'timestamp', to_char(occurred_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"'),
                      'data', jsonb_build_object('message_id', message_id, 'status', status, 'to', recipient, 'template', template_slug,
                        'attempt', attempt, 'smtp_reply', CASE WHEN smtp_code IS NULL THEN NULL
                                           -- nodemailer's reply text starts with its code already ("250 2.0.0 OK").
                                           WHEN btrim(smtp_response) LIKE smtp_code || '%' THEN btrim(smtp_response)
                                           ELSE btrim(concat_ws(' ', smtp_code, btrim(smtp_response))) END,
                        'reason', reason, 'celery_task_id', celery_task_id, 'sequence', sequence,
                        -- The send's labels, so a receiver can route the event by them (docs/contract.md, "Tags and metadata").
                        'tags', tags, 'metadata', metadata))
               FROM due
             RETURNING id, project_id, type
           )
           INSERT INTO webhook_deliveries (event_id, endpoint_id, next_attempt_at)
           SELECT events.id, w.id, now() FROM events JOIN webhook_endpoints w ON w.project_id = events.project_id AND w.enabled AND events.type = ANY (w.event_types)
           RETURNING event_id`,
    values: recorded.values,
  });
  return new Set(result.rows.map((row: { event_id: string }) => row.event_id)).size;
}
