// The sender's reads and writes of webhook_endpoints, webhook_deliveries and webhook_attempts. A delivery is claimed
// by moving its next_attempt_at past the attempt's longest possible duration (a lease): a second copy of its message
// (a replica killed mid-attempt, a relay that published twice) finds it not due and waits, and once the lease runs
// out the copy JetStream offers again makes the attempt.
import type { Pool } from '@notify/platform/database';

export interface ClaimedDelivery {
  readonly attempts: number;
  readonly url: string;
  /** The current secret first, then the previous one while it still signs. */
  readonly secrets: string[];
  /** The exact body, the same on every attempt. */
  readonly body: string;
}

/** What a message finds: its delivery claimed, due later (wait that long), or nothing left to do. */
export type Claim =
  | { readonly kind: 'claimed'; readonly delivery: ClaimedDelivery }
  | { readonly kind: 'later'; readonly inMs: number }
  | { readonly kind: 'settled' }
  | { readonly kind: 'endpoint_disabled' };

export async function claimDelivery(pool: Pool, eventId: number, endpointId: number, leaseMs: number): Promise<Claim> {
  const claimed = await pool.query<{ attempts: number; url: string; secret: string; previousSecret: string | null; body: string }>({
    name: 'webhook-claim',
    text: `UPDATE webhook_deliveries d SET next_attempt_at = now() + $3 * interval '1 millisecond', updated_at = now()
             FROM webhook_endpoints w, webhook_events e
            WHERE d.event_id = $1 AND d.endpoint_id = $2 AND d.state = 'pending' AND (d.next_attempt_at IS NULL OR d.next_attempt_at <= now())
              AND w.id = d.endpoint_id AND w.enabled AND e.id = d.event_id
        RETURNING d.attempts, w.url, w.secret,
                  CASE WHEN w.previous_secret_expires_at > now() THEN w.previous_secret END AS "previousSecret", e.payload::text AS body`,
    values: [eventId, endpointId, leaseMs],
  });
  const row = claimed.rows[0];
  if (row) {
    return { kind: 'claimed', delivery: { attempts: row.attempts, url: row.url, secrets: row.previousSecret ? [row.secret, row.previousSecret] : [row.secret], body: row.body } };
  }
  const found = await pool.query<{ state: string; waitMs: number | null; enabled: boolean }>({
    name: 'webhook-claim-why-not',
    text: `SELECT d.state, ceil(extract(epoch FROM d.next_attempt_at - now()) * 1000)::float8 AS "waitMs", w.enabled
             FROM webhook_deliveries d JOIN webhook_endpoints w ON w.id = d.endpoint_id WHERE d.event_id = $1 AND d.endpoint_id = $2`,
    values: [eventId, endpointId],
  });
  const why = found.rows[0];
  if (!why || why.state !== 'pending') return { kind: 'settled' };
  if (!why.enabled) return { kind: 'endpoint_disabled' };
  return { kind: 'later', inMs: Math.max(1, why.waitMs ?? 1) };
}

export interface AttemptRecord {
  readonly eventId: number;
  readonly endpointId: number;
  /** 1 for the first attempt. */
  readonly attempt: number;
  readonly statusCode: number | null;
  readonly latencyMs: number;
  readonly responseBody: string | null;
  readonly error: string | null;
  /** What the delivery becomes: done, failed for good, or pending again after `retryInMs`. */
  readonly outcome: { readonly state: 'succeeded' } | { readonly state: 'failed' } | { readonly state: 'pending'; readonly retryInMs: number };
  /** 410 Gone: the endpoint is disabled at once. */
  readonly gone: boolean;
}

/** How a failing endpoint ended after an attempt: still enabled, or disabled now (and why). */
export type EndpointChange = 'none' | 'disabled_gone' | 'disabled_failing';

/**
 * Records the attempt, moves the delivery, and keeps the endpoint's run of failures: a success ends it, a failure
 * starts it or, `disableAfterMs` after it started, disables the endpoint. One transaction.
 */
export async function recordAttempt(pool: Pool, record: AttemptRecord, disableAfterMs: number): Promise<EndpointChange> {
  const succeeded = record.outcome.state === 'succeeded';
  const result = await pool.query<{ change: EndpointChange }>({
    name: 'webhook-record-attempt',
    text: `WITH attempt AS (
             INSERT INTO webhook_attempts (event_id, endpoint_id, attempt, status_code, latency_ms, response_body, error)
             VALUES ($1, $2, $3, $4, $5, $6, $7)
           ), delivery AS (
             UPDATE webhook_deliveries SET state = $8, attempts = $3, updated_at = now(),
                    next_attempt_at = CASE WHEN $8 = 'pending' THEN now() + $9 * interval '1 millisecond' END
              WHERE event_id = $1 AND endpoint_id = $2
           )
           UPDATE webhook_endpoints w
              SET failing_since = CASE WHEN $10 THEN NULL ELSE coalesce(w.failing_since, now()) END,
                  enabled = w.enabled AND NOT $11 AND ($10 OR coalesce(w.failing_since, now()) > now() - $12 * interval '1 millisecond'),
                  disabled_reason = CASE
                    WHEN NOT w.enabled THEN w.disabled_reason
                    WHEN $11 THEN 'gone'
                    WHEN NOT $10 AND coalesce(w.failing_since, now()) <= now() - $12 * interval '1 millisecond' THEN 'failing'
                    ELSE w.disabled_reason END,
                  updated_at = now()
             FROM webhook_endpoints old
            WHERE w.id = $2 AND old.id = w.id
        RETURNING CASE WHEN old.enabled AND NOT w.enabled THEN (CASE WHEN $11 THEN 'disabled_gone' ELSE 'disabled_failing' END) ELSE 'none' END AS change`,
    values: [
      record.eventId,
      record.endpointId,
      record.attempt,
      record.statusCode,
      record.latencyMs,
      record.responseBody,
      record.error,
      record.outcome.state,
      record.outcome.state === 'pending' ? record.outcome.retryInMs : 0,
      succeeded,
      record.gone,
      disableAfterMs,
    ],
  });
  return result.rows[0]?.change ?? 'none';
}

/** A delivery to an endpoint that was disabled meanwhile is not attempted: it is recorded failed. */
export async function failDelivery(pool: Pool, eventId: number, endpointId: number): Promise<void> {
  await pool.query({
    name: 'webhook-fail-delivery',
    text: `UPDATE webhook_deliveries SET state = 'failed', next_attempt_at = NULL, updated_at = now() WHERE event_id = $1 AND endpoint_id = $2 AND state = 'pending'`,
    values: [eventId, endpointId],
  });
}
