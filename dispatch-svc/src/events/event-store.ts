// Persisting one delivery event: record it once in message_events and move the message forward if the state machine
// says so, in one transaction with the message row locked, so events of one message apply one at a time.
import { withTransaction, type Pool } from '@notify/platform/database';
import type { DeliveryEvent } from '@notify/proto';
import type { EventOutcome } from '../metrics.ts';
import { decide, type MessageProgress } from './state-machine.ts';

/**
 * `applied`: recorded and the message moved; `recorded`: recorded, but late or after a terminal state, so the message
 * did not move; `duplicate`: this (message, attempt, state) was recorded before; `unknown_message`: no such message.
 */
export type StoredOutcome = Exclude<EventOutcome, 'malformed'>;

export async function applyDeliveryEvent(pool: Pool, event: DeliveryEvent): Promise<StoredOutcome> {
  return withTransaction(pool, async (client) => {
    const found = await client.query<MessageProgress>({
      name: 'event-lock-message',
      text: `SELECT state, state_attempt AS "stateAttempt", attempts, last_smtp_code AS "lastSmtpCode",
                    last_smtp_response AS "lastSmtpResponse", failure_reason AS "failureReason"
               FROM messages WHERE id = $1 FOR UPDATE`,
      values: [event.messageId],
    });
    const current = found.rows[0];
    if (!current) return 'unknown_message';

    const inserted = await client.query({
      name: 'event-insert',
      text: `INSERT INTO message_events (message_id, state, attempt, smtp_code, smtp_response, reason, occurred_at)
             VALUES ($1, $2, $3, $4, $5, $6, $7)
             ON CONFLICT (message_id, attempt, state) DO NOTHING`,
      values: [event.messageId, event.state, event.attempt, event.smtpCode ?? null, event.smtpResponse ?? null, event.reason ?? null, event.occurredAt],
    });
    // Already recorded means already decided on: the first copy either moved the message or could not.
    if (inserted.rowCount !== 1) return 'duplicate';

    const decision = decide(current, event);
    if (!decision.apply) return 'recorded';
    const next = decision.next;
    await client.query({
      name: 'event-advance',
      text: `UPDATE messages SET state = $2, state_attempt = $3, attempts = $4, last_smtp_code = $5, last_smtp_response = $6,
                                 failure_reason = $7, updated_at = now()
              WHERE id = $1`,
      values: [event.messageId, next.state, next.stateAttempt, next.attempts, next.lastSmtpCode, next.lastSmtpResponse, next.failureReason],
    });
    return 'applied';
  });
}
