// What the database says about the messages a scenario created: ids are a bigserial, and scenarios run one after
// another, so the messages of one scenario are the ids between the last id before it and the last id after it.
import type pg from 'pg';

/** Message ids `after < id <= upTo`. */
export interface IdRange {
  readonly after: number;
  readonly upTo: number;
}

export interface DeliveryState {
  readonly total: number;
  readonly sent: number;
  readonly failed: number;
  /** queued, sending or deferred. */
  readonly pending: number;
}

export interface QueuedToSent {
  readonly messages: number;
  readonly p50Ms: number;
  readonly p99Ms: number;
}

export interface SentSpan {
  readonly messages: number;
  /** Seconds between the first and the last `sent` event of the range (mailer clock). */
  readonly spanS: number;
  /** (messages - 1) / span: the steady delivery rate between the first and the last delivery. */
  readonly perSecond: number;
}

export async function lastMessageId(db: pg.Pool): Promise<number> {
  const { rows } = await db.query<{ id: number | null }>('SELECT max(id)::int AS id FROM messages');
  return rows[0]?.id ?? 0;
}

/** The last message id once it has not moved for a second (at most `timeoutMs`): acceptance has come to rest. */
export async function quietMessageId(db: pg.Pool, timeoutMs: number): Promise<number> {
  const deadline = Date.now() + timeoutMs;
  let last = await lastMessageId(db);
  for (;;) {
    await new Promise((resolve) => setTimeout(resolve, 1_000));
    const now = await lastMessageId(db);
    if (now === last || Date.now() > deadline) return now;
    last = now;
  }
}

export async function deliveryState(db: pg.Pool, range: IdRange): Promise<DeliveryState> {
  const { rows } = await db.query<DeliveryState>(
    `SELECT count(*)::int AS total,
            count(*) FILTER (WHERE state = 'sent')::int AS sent,
            count(*) FILTER (WHERE state = 'failed')::int AS failed,
            count(*) FILTER (WHERE state NOT IN ('sent', 'failed'))::int AS pending
       FROM messages WHERE id > $1 AND id <= $2`,
    [range.after, range.upTo],
  );
  return rows[0] ?? { total: 0, sent: 0, failed: 0, pending: 0 };
}

/** Polls until every message of the range is sent or failed, or the time is up; returns the last state seen. */
export async function waitSettled(db: pg.Pool, range: IdRange, timeoutMs: number): Promise<DeliveryState & { waitedS: number }> {
  const started = performance.now();
  for (;;) {
    const state = await deliveryState(db, range);
    const waitedS = (performance.now() - started) / 1_000;
    if (state.pending === 0 || performance.now() - started > timeoutMs) return { ...state, waitedS };
    await new Promise((resolve) => setTimeout(resolve, 250));
  }
}

/** Time from acceptance (messages.created_at) to the first `sent` event of each message of the range. */
export async function queuedToSent(db: pg.Pool, range: IdRange): Promise<QueuedToSent> {
  const { rows } = await db.query<{ messages: number; p50: number | null; p99: number | null }>(
    `WITH delivered AS (
       SELECT extract(epoch FROM min(e.occurred_at) - m.created_at) * 1000 AS ms
         FROM messages m JOIN message_events e ON e.message_id = m.id AND e.state = 'sent'
        WHERE m.id > $1 AND m.id <= $2
        GROUP BY m.id, m.created_at)
     SELECT count(*)::int AS messages,
            percentile_disc(0.5) WITHIN GROUP (ORDER BY ms)::float8 AS p50,
            percentile_disc(0.99) WITHIN GROUP (ORDER BY ms)::float8 AS p99
       FROM delivered`,
    [range.after, range.upTo],
  );
  const row = rows[0];
  return { messages: row?.messages ?? 0, p50Ms: row?.p50 ?? 0, p99Ms: row?.p99 ?? 0 };
}

/** The `sent` events of the range's messages (the first per message), only those at or after `since` if given. */
export async function sentSpan(db: pg.Pool, range: IdRange, since?: Date): Promise<SentSpan> {
  const { rows } = await db.query<{ messages: number; span: number | null }>(
    `WITH delivered AS (
       SELECT min(e.occurred_at) AS at FROM message_events e
        WHERE e.state = 'sent' AND e.message_id > $1 AND e.message_id <= $2
        GROUP BY e.message_id
       HAVING min(e.occurred_at) >= $3)
     SELECT count(*)::int AS messages, extract(epoch FROM max(at) - min(at))::float8 AS span FROM delivered`,
    [range.after, range.upTo, since ?? new Date(0)],
  );
  const messages = rows[0]?.messages ?? 0;
  const spanS = rows[0]?.span ?? 0;
  return { messages, spanS, perSecond: spanS > 0 ? (messages - 1) / spanS : 0 };
}
