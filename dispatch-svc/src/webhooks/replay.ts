// Replaying a webhook event: the same event (same `webhook-id`, same body) goes out again.
//
// Contract with the webhook relay and sender (dispatch-svc/src/events/, webhook-svc/), which own the sending:
//   - a replay sets the event's webhook_deliveries rows (all of them, or the one endpoint's) back to
//     state 'pending' with next_attempt_at = now(), keeping `attempts` (the next attempt is numbered after them) and
//     noting them in `replayed_after` (the retry schedule starts again from there: a replay gets all its retries), and
//   - clears webhook_events.published_at in the same transaction,
// so the relay, which publishes every event whose published_at is NULL, publishes it again, and the sender delivers
// it to the deliveries that are pending (and whose endpoint is enabled), signing with the event's `evt_<id>`.
import { type Pool, withTransaction } from '@notify/platform/database';
import type { Scope } from './endpoint-store.ts';

export type ReplayOutcome =
  | { readonly kind: 'replayed'; readonly endpointIds: number[] }
  | { readonly kind: 'event_not_found' }
  | { readonly kind: 'undelivered' };

/** `endpointId` 0 replays to every endpoint the event went to; a scope limits it to events of its project. */
export async function replayEvent(pool: Pool, eventId: number, endpointId: number, scope: Scope): Promise<ReplayOutcome> {
  return withTransaction(pool, async (client) => {
    // Locked so a concurrent relay pass cannot mark it published between our two updates.
    const event = await client.query({
      name: 'webhook-replay-event',
      text: `SELECT e.id FROM webhook_events e JOIN projects p ON p.id = e.project_id
              WHERE e.id = $1 AND ($2::bigint IS NULL OR (e.project_id = $2 AND p.organization_id = $3))
                FOR UPDATE OF e`,
      values: [eventId, scope?.projectId ?? null, scope?.organizationId ?? null],
    });
    if (event.rowCount !== 1) return { kind: 'event_not_found' };
    const reset = await client.query<{ endpointId: number }>({
      name: 'webhook-replay-deliveries',
      text: `UPDATE webhook_deliveries SET state = 'pending', next_attempt_at = now(), replayed_after = attempts, updated_at = now()
              WHERE event_id = $1 AND ($2::bigint = 0 OR endpoint_id = $2)
              RETURNING endpoint_id AS "endpointId"`,
      values: [eventId, endpointId],
    });
    if (reset.rows.length === 0) return { kind: 'undelivered' };
    await client.query({ name: 'webhook-replay-unpublish', text: 'UPDATE webhook_events SET published_at = NULL WHERE id = $1', values: [eventId] });
    return { kind: 'replayed', endpointIds: reset.rows.map((row) => row.endpointId).sort((a, b) => a - b) };
  });
}
