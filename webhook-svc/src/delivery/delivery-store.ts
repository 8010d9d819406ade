// The sender's reads and writes of webhook_endpoints, webhook_deliveries and webhook_attempts. A delivery is claimed
// by moving its next_attempt_at past the attempt's longest possible duration (a lease): a second copy of its message
// (a replica killed mid-attempt, a relay that published twice) finds it not due and waits, and once the lease runs
// out the copy JetStream offers again makes the attempt.
import { Batcher, fulfilled } from '@notify/platform';
import { batchRows, type Pool, type RowColumn } from '@notify/platform/database';

export interface ClaimedDelivery {
  readonly attempts: number;
  /** Attempts made before the delivery's latest replay: its retry schedule counts from there. */
  readonly replayedAfter: number;
  readonly url: string;
  /** The current secret first, then the previous one while it still signs, as stored: opened by stored-secrets.ts. */
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

/** One delivery: an event for an endpoint. */
export interface DeliveryKey {
  readonly eventId: number;
  readonly endpointId: number;
}

const keyOf = (key: DeliveryKey): string => `${key.eventId}:${key.endpointId}`;

/** PostgreSQL's deadlock_detected: the statement was cancelled whole, so it can be made again. */
const deadlockDetected = '40P01';

/**
 * Runs a statement that writes several rows in no set order, again if PostgreSQL broke a deadlock by cancelling it:
 * two replicas' statements may name the same rows in opposite orders (copies of one delivery, one endpoint's run).
 */
async function retriedOnDeadlock<T>(statement: () => Promise<T>): Promise<T> {
  for (let attempt = 1; ; attempt += 1) {
    try {
      return await statement();
    } catch (error) {
      if (attempt === 3 || (error as { code?: string }).code !== deadlockDetected) throw error;
    }
  }
}

/** A delivery's key as the rows of a batched statement (batchRows). */
const keyColumns: readonly RowColumn<DeliveryKey>[] = [
  { type: 'bigint', value: (key) => key.eventId },
  { type: 'bigint', value: (key) => key.endpointId },
];
/** A key no delivery has, to pad a batch of claims with (batchRows). */
const noDelivery: DeliveryKey = { eventId: 0, endpointId: 0 };

/** A claimed delivery as the claim's RETURNING gives it (claimStatement). */
interface ClaimedRow {
  readonly eventId: string;
  readonly endpointId: string;
  readonly attempts: number;
  readonly replayedAfter: number;
  readonly url: string;
  readonly secret: string;
  readonly previousSecret: string | null;
  readonly body: string;
}

/**
 * The claim: the due, pending deliveries of the keys in `keys` (a FROM item with columns event_id and endpoint_id),
 * their endpoint enabled, leased for `lease` (a parameter, in ms), `unless` an extra condition on `d`.
 */
const claimStatement = (keys: string, lease: string, unless = '') =>
  `UPDATE webhook_deliveries d SET next_attempt_at = now() + ${lease} * interval '1 millisecond', updated_at = now()
     FROM ${keys}, webhook_endpoints w, webhook_events e
    WHERE d.event_id = k.event_id AND d.endpoint_id = k.endpoint_id
      AND d.state = 'pending' AND (d.next_attempt_at IS NULL OR d.next_attempt_at <= now())
      AND w.id = d.endpoint_id AND w.enabled AND e.id = d.event_id${unless}
RETURNING d.event_id AS "eventId", d.endpoint_id AS "endpointId", d.attempts, d.replayed_after AS "replayedAfter", w.url, coalesce(w.sealed_secret, w.secret) AS secret,
          CASE WHEN w.previous_secret_expires_at > now() THEN coalesce(w.sealed_previous_secret, w.previous_secret) END AS "previousSecret", e.payload::text AS body`;

const claimedDelivery = (row: ClaimedRow): ClaimedDelivery => ({
  attempts: row.attempts,
  replayedAfter: row.replayedAfter,
  url: row.url,
  secrets: row.previousSecret ? [row.secret, row.previousSecret] : [row.secret],
  body: row.body,
});

/**
 * Claims the deliveries named, in one statement, and says for each what it found. A delivery named twice is claimed for
 * the first only: the second finds the lease and waits, as a second copy of its message would.
 */
export async function claimDeliveries(pool: Pool, keys: readonly DeliveryKey[], leaseMs: number): Promise<Claim[]> {
  const batch = batchRows('webhook-claim', keys, keyColumns, { filler: noDelivery });
  const claimed = await retriedOnDeadlock(() =>
    pool.query<ClaimedRow>({
      name: batch.name,
      text: claimStatement(`${batch.rows} AS k (event_id, endpoint_id)`, '$3'),
      values: [...batch.values, leaseMs],
    }),
  );
  const claimedRows = new Map(claimed.rows.map((row) => [`${row.eventId}:${row.endpointId}`, row]));
  const claims: Array<Claim | undefined> = keys.map((key) => {
    const row = claimedRows.get(keyOf(key));
    if (!row) return undefined;
    claimedRows.delete(keyOf(key));
    return { kind: 'claimed', delivery: claimedDelivery(row) };
  });
  const asked = keys.filter((_, index) => claims[index] === undefined);
  if (asked.length === 0) return claims as Claim[];
  // Why not: settled already, its endpoint disabled, or due later (a lease or a retry's delay).
  const asking = batchRows('webhook-claim-why-not', asked, keyColumns, { filler: noDelivery });
  const found = await pool.query<{ eventId: string; endpointId: string; state: string; waitMs: number | null; enabled: boolean }>({
    name: asking.name,
    text: `SELECT d.event_id AS "eventId", d.endpoint_id AS "endpointId", d.state,
                  ceil(extract(epoch FROM d.next_attempt_at - now()) * 1000)::float8 AS "waitMs", w.enabled
             FROM ${asking.rows} AS k (event_id, endpoint_id)
             JOIN webhook_deliveries d ON d.event_id = k.event_id AND d.endpoint_id = k.endpoint_id
             JOIN webhook_endpoints w ON w.id = d.endpoint_id`,
    values: asking.values,
  });
  const why = new Map(found.rows.map((row) => [`${row.eventId}:${row.endpointId}`, row]));
  return keys.map((key, index): Claim => {
    const claim = claims[index];
    if (claim) return claim;
    const row = why.get(keyOf(key));
    if (row?.state !== 'pending') return { kind: 'settled' };
    if (!row.enabled) return { kind: 'endpoint_disabled' };
    return { kind: 'later', inMs: Math.max(1, row.waitMs ?? 1) };
  });
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
  /**
   * The delivery its slot takes next, one of the same endpoint's that waited for it: claimed in the same statement (one
   * round trip and one commit fewer per delivery while a burst to an endpoint drains) if the attempts recorded with it
   * left its endpoint healthy.
   */
  readonly next?: DeliveryKey;
}

/** How a failing endpoint ended after an attempt: still enabled, or disabled now (and why). */
export type EndpointChange = 'none' | 'disabled_gone' | 'disabled_failing';

/** An attempt as the rows of the record statement (batchRows): its delivery, what happened, and what it became. */
const recordColumns: readonly RowColumn<AttemptRecord>[] = [
  { type: 'bigint', value: (record) => record.eventId },
  { type: 'bigint', value: (record) => record.endpointId },
  { type: 'integer', value: (record) => record.attempt },
  { type: 'integer', value: (record) => record.statusCode },
  { type: 'integer', value: (record) => record.latencyMs },
  { type: 'text', value: (record) => record.responseBody },
  { type: 'text', value: (record) => record.error },
  { type: 'text', value: (record) => record.outcome.state },
  { type: 'float8', value: (record) => (record.outcome.state === 'pending' ? record.outcome.retryInMs : 0) },
  { type: 'boolean', value: (record) => record.outcome.state === 'succeeded' },
  { type: 'boolean', value: (record) => record.gone },
];

/** What recording an attempt did: its endpoint's change, and its `next` delivery if that was claimed. */
export interface Recorded {
  readonly change: EndpointChange;
  /** Absent when no `next` was named, or it could not be claimed here: claimDeliveries then says why. */
  readonly next?: ClaimedDelivery;
}

/**
 * Records the attempts, moves their deliveries, and keeps each endpoint's run of failures: a success ends it, a failure
 * starts it or, `disableAfterMs` after it started, disables the endpoint. One statement; an endpoint's row is written
 * only when its run starts or ends or it is disabled. Of the attempts of one endpoint, the first carries the endpoint's
 * change, the others 'none'; attempts recorded together happened at once, so any success among them ends the run.
 *
 * The same statement claims the `next` deliveries, leased for `leaseMs`, of endpoints whose attempts here all
 * succeeded. The others are left to claimDeliveries, which sees what this statement wrote: an endpoint it disables, a
 * `next` that is a copy of a delivery recorded here (a row is updated once per statement).
 */
export async function recordAttempts(
  pool: Pool,
  records: readonly AttemptRecord[],
  settings: { readonly disableAfterMs: number; readonly leaseMs: number },
): Promise<Recorded[]> {
  const batch = batchRows('webhook-record-attempts', records, recordColumns);
  const nextKeys = records.flatMap((record) => (record.next ? [record.next] : []));
  const claiming =
    nextKeys.length === 0 ? undefined : batchRows('claiming', nextKeys, keyColumns, { filler: noDelivery, firstParameter: recordColumns.length + 3 });
  const endpointUpdate = `UPDATE webhook_endpoints w
              SET failing_since = CASE WHEN o.succeeded THEN NULL ELSE coalesce(w.failing_since, now()) END,
                  enabled = w.enabled AND NOT o.gone AND (o.succeeded OR coalesce(w.failing_since, now()) > now() - $12 * interval '1 millisecond'),
                  disabled_reason = CASE
                    WHEN NOT w.enabled THEN w.disabled_reason
                    WHEN o.gone THEN 'gone'
                    WHEN NOT o.succeeded AND coalesce(w.failing_since, now()) <= now() - $12 * interval '1 millisecond' THEN 'failing'
                    ELSE w.disabled_reason END,
                  updated_at = now()
             FROM outcome o, webhook_endpoints old
            WHERE w.id = o.endpoint_id AND old.id = w.id
              AND ((o.gone AND w.enabled) OR (o.succeeded AND w.failing_since IS NOT NULL)
                   OR (NOT o.succeeded AND (w.failing_since IS NULL OR (w.enabled AND w.failing_since <= now() - $12 * interval '1 millisecond'))))
        RETURNING w.id AS "endpointId", CASE WHEN old.enabled AND NOT w.enabled THEN (CASE WHEN o.gone THEN 'disabled_gone' ELSE 'disabled_failing' END) ELSE 'none' END AS change`;
  const text = `WITH r AS (
             SELECT * FROM ${batch.rows}
                      AS r (event_id, endpoint_id, attempt, status_code, latency_ms, response_body, error, state, retry_ms, succeeded, gone)
           ), attempt AS (
             INSERT INTO webhook_attempts (event_id, endpoint_id, attempt, status_code, latency_ms, response_body, error)
             SELECT event_id, endpoint_id, attempt, status_code, latency_ms, response_body, error FROM r
           ), delivery AS (
             UPDATE webhook_deliveries d SET state = r.state, attempts = r.attempt, updated_at = now(),
                    next_attempt_at = CASE WHEN r.state = 'pending' THEN now() + r.retry_ms * interval '1 millisecond' END
               FROM r WHERE d.event_id = r.event_id AND d.endpoint_id = r.endpoint_id
           ), outcome AS (
             SELECT endpoint_id, bool_or(succeeded) AS succeeded, bool_or(gone) AS gone, bool_and(succeeded) AS healthy FROM r GROUP BY endpoint_id
           )`;
  const query = claiming
    ? {
        name: `${batch.name}-${claiming.name}`,
        text: `${text}, endpoint AS (${endpointUpdate}), claimed AS (${claimStatement(
          `${claiming.rows} AS k (event_id, endpoint_id)`,
          '$13',
          `
      AND NOT EXISTS (SELECT 1 FROM r WHERE r.event_id = d.event_id AND r.endpoint_id = d.endpoint_id)
      AND EXISTS (SELECT 1 FROM outcome o WHERE o.endpoint_id = d.endpoint_id AND o.healthy)`,
        )})
           SELECT "endpointId", change, NULL::bigint AS "eventId", NULL::integer AS attempts, NULL::integer AS "replayedAfter", NULL::text AS url, NULL::text AS secret, NULL::text AS "previousSecret", NULL::text AS body FROM endpoint
           UNION ALL
           SELECT "endpointId", NULL, "eventId", attempts, "replayedAfter", url, secret, "previousSecret", body FROM claimed`,
        values: [...batch.values, settings.disableAfterMs, settings.leaseMs, ...claiming.values],
      }
    : { name: batch.name, text: `${text} ${endpointUpdate}`, values: [...batch.values, settings.disableAfterMs] };
  const result = await retriedOnDeadlock(() => pool.query<{ endpointId: string; change: EndpointChange | null } & Partial<ClaimedRow>>(query));
  const changes = new Map<number, EndpointChange>();
  const claimedRows = new Map<string, ClaimedRow>();
  for (const row of result.rows) {
    if (row.change !== null) changes.set(Number(row.endpointId), row.change);
    else claimedRows.set(`${row.eventId}:${row.endpointId}`, row as ClaimedRow);
  }
  return records.map((record) => {
    const change = changes.get(record.endpointId) ?? 'none';
    changes.delete(record.endpointId);
    const claimed = record.next && claimedRows.get(keyOf(record.next));
    if (!claimed || !record.next) return { change };
    // A delivery named twice is claimed for the first.
    claimedRows.delete(keyOf(record.next));
    return { change, next: claimedDelivery(claimed) };
  });
}

/** A delivery to an endpoint that was disabled meanwhile is not attempted: it is recorded failed. */
export async function failDelivery(pool: Pool, eventId: number, endpointId: number): Promise<void> {
  await pool.query({
    name: 'webhook-fail-delivery',
    text: `UPDATE webhook_deliveries SET state = 'failed', next_attempt_at = NULL, updated_at = now() WHERE event_id = $1 AND endpoint_id = $2 AND state = 'pending'`,
    values: [eventId, endpointId],
  });
}

/**
 * The sender's claims and records, in batches: what many requests ask at once (claims as a burst of deliveries
 * arrives, records as their answers come in) goes out in one statement, one batch at a time.
 */
export interface DeliveryStore {
  claim(key: DeliveryKey): Promise<Claim>;
  record(attempt: AttemptRecord): Promise<Recorded>;
}

export function batchedStore(pool: Pool, settings: { readonly maxBatch: number; readonly leaseMs: number; readonly disableAfterMs: number }): DeliveryStore {
  const claims = new Batcher<DeliveryKey, Claim>({
    maxBatchSize: settings.maxBatch,
    concurrency: 1,
    run: async (keys) => (await claimDeliveries(pool, keys, settings.leaseMs)).map(fulfilled),
  });
  const records = new Batcher<AttemptRecord, Recorded>({
    maxBatchSize: settings.maxBatch,
    concurrency: 1,
    run: async (attempts) => {
      try {
        return (await recordAttempts(pool, attempts, settings)).map(fulfilled);
      } catch (error) {
        if (attempts.length === 1) throw error;
        // One record the database refuses (its event purged meanwhile, say) must not fail the others: each on its own.
        return Promise.allSettled(attempts.map(async (attempt) => (await recordAttempts(pool, [attempt], settings))[0] ?? { change: 'none' }));
      }
    },
  });
  return { claim: (key) => claims.submit(key), record: (attempt) => records.submit(attempt) };
}
