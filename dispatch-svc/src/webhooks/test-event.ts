// A test event (POST /api/v1/webhooks/{id}/test, type webhook.test): recorded as any webhook event is, with a pending
// delivery to the one endpoint asked, so the relay publishes it and webhook-svc delivers, signs, retries and logs it
// exactly as it does an event about a message (see replay.ts for that contract). It is about no message: its
// message_id is NULL, and it goes with its endpoint when that is deleted (endpoint-store.ts).
import type { PoolClient } from '@notify/platform/database';
import { webhookTestEventType } from '@notify/proto';
import type { Scope } from './endpoint-store.ts';

export type TestEventOutcome =
  | { readonly kind: 'recorded'; readonly eventId: number; readonly createdAt: Date }
  | { readonly kind: 'endpoint_not_found' }
  | { readonly kind: 'endpoint_disabled' };

/**
 * Records the event and its delivery, in the caller's transaction. The body (docs/contract.md, "Webhooks"):
 * `{"type": "webhook.test", "timestamp": ..., "data": {"endpoint_id": <id>}}`.
 */
export async function recordTestEvent(client: PoolClient, endpointId: number, scope: Scope): Promise<TestEventOutcome> {
  // Locked so that a concurrent disable or delete comes before or after the event, never beside it.
  const endpoint = await client.query<{ projectId: number; enabled: boolean }>({
    name: 'webhook-test-endpoint',
    text: `SELECT project_id AS "projectId", enabled FROM webhook_endpoints
            WHERE id = $1 AND ($2::bigint IS NULL OR (project_id = $2 AND organization_id = $3)) FOR SHARE`,
    values: [endpointId, scope?.projectId ?? null, scope?.organizationId ?? null],
  });
  const found = endpoint.rows[0];
  if (!found) return { kind: 'endpoint_not_found' };
  if (!found.enabled) return { kind: 'endpoint_disabled' };
  const event = await client.query<{ id: number; createdAt: Date }>({
    name: 'webhook-test-event',
    text: `INSERT INTO webhook_events (project_id, message_id, type, sequence, payload)
           VALUES ($1, NULL, $2, 0, jsonb_build_object('type', $2::text, 'timestamp', to_char(now() AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"'),
                                                       'data', jsonb_build_object('endpoint_id', $3::bigint)))
           RETURNING id, created_at AS "createdAt"`,
    values: [found.projectId, webhookTestEventType, endpointId],
  });
  const recorded = event.rows[0];
  if (!recorded) throw new Error('INSERT ... RETURNING returned no row');
  await client.query({
    name: 'webhook-test-delivery',
    text: 'INSERT INTO webhook_deliveries (event_id, endpoint_id, next_attempt_at) VALUES ($1, $2, now())',
    values: [recorded.id, endpointId],
  });
  return { kind: 'recorded', eventId: recorded.id, createdAt: recorded.createdAt };
}
