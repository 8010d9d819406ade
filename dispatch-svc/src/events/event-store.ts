// Persisting delivery events, a batch at a time: in one transaction the messages they name are locked, every event is
// recorded once in message_events, and each message is moved forward as far as the state machine allows. A batch
// costs the same six round trips (BEGIN, lock, insert, update, count, COMMIT) whether it holds one event or a hundred.
import { batchRows, type Pool, type PoolClient, type RowColumn, withTransaction } from '@notify/platform/database';
import type { DeliveryEvent } from '@notify/proto';
import { erasedRecipient, scrubbedEvent } from '../erasure/erase-recipient.ts';
import type { EventOutcome } from '../metrics.ts';
import { countStats, type StatsChange } from '../stats/stats-store.ts';
import { suppressHardBounces } from '../suppressions/suppression-store.ts';
import { advance, compareLifecycle, type MessageProgress } from './state-machine.ts';
import { recordWebhookEvents } from './webhook-events.ts';

/**
 * `applied`: recorded and the message moved; `recorded`: recorded, but late or after a terminal state, so the message
 * did not move; `duplicate`: this (message, attempt, state) was recorded before, by an earlier batch or earlier in this
 * one; `unknown_message`: no such message.
 */
export type StoredOutcome = Exclude<EventOutcome, 'malformed'>;

/** An event's identity in message_events: its unique key. */
const eventKey = (event: Pick<DeliveryEvent, 'messageId' | 'attempt' | 'state'>): string => `${event.messageId}:${event.attempt}:${event.state}`;

const idColumns: readonly RowColumn<number>[] = [{ type: 'bigint', value: (id) => id }];

/**
 * Locks the rows in id order, as every replica does, so two batches naming the same messages wait for each other
 * instead of deadlocking. Messages that do not exist are simply not returned. A short batch is padded with id 0, which
 * no message has (platform batchRows).
 */
async function lockMessages(
  client: PoolClient,
  ids: readonly number[],
): Promise<{ progress: Map<number, MessageProgress>; erased: Set<number>; projects: Map<number, number> }> {
  const wanted = batchRows('event-lock-messages', ids, idColumns, { filler: 0 });
  const found = await client.query<MessageProgress & { id: number; erased: boolean; projectId: string }>({
    name: wanted.name,
    text: `SELECT m.id, m.project_id AS "projectId", m.state, m.state_attempt AS "stateAttempt", m.attempts, m.last_smtp_code AS "lastSmtpCode",
                  m.last_smtp_response AS "lastSmtpResponse", m.failure_reason AS "failureReason", m.recipient = $2 AS erased
             FROM ${wanted.rows} AS wanted (id) JOIN messages m ON m.id = wanted.id
            ORDER BY m.id
              FOR UPDATE OF m`,
    values: [...wanted.values, erasedRecipient],
  });
  return {
    progress: new Map(found.rows.map(({ id, erased, projectId, ...progress }) => [id, progress])),
    erased: new Set(found.rows.filter((row) => row.erased).map((row) => row.id)),
    projects: new Map(found.rows.map((row) => [row.id, Number(row.projectId)])),
  };
}

/** Inserts the events in one statement; returns the keys of those not recorded before. */
async function recordEvents(client: PoolClient, events: readonly DeliveryEvent[]): Promise<Set<string>> {
  const inserted = await client.query<Pick<DeliveryEvent, 'messageId' | 'attempt' | 'state'>>({
    name: 'event-insert-batch',
    text: `INSERT INTO message_events (message_id, state, attempt, smtp_code, smtp_response, reason, occurred_at)
           SELECT * FROM unnest($1::bigint[], $2::message_state[], $3::integer[], $4::integer[], $5::text[], $6::text[], $7::timestamptz[])
           ON CONFLICT (message_id, attempt, state) DO NOTHING
           RETURNING message_id AS "messageId", attempt, state`,
    values: [
      events.map((event) => event.messageId),
      events.map((event) => event.state),
      events.map((event) => event.attempt),
      events.map((event) => event.smtpCode ?? null),
      events.map((event) => event.smtpResponse ?? null),
      events.map((event) => event.reason ?? null),
      events.map((event) => event.occurredAt),
    ],
  });
  return new Set(inserted.rows.map(eventKey));
}

type Advanced = readonly [id: number, next: MessageProgress];

const advanceColumns: readonly RowColumn<Advanced>[] = [
  { type: 'bigint', value: ([id]) => id },
  { type: 'message_state', value: ([, next]) => next.state },
  { type: 'integer', value: ([, next]) => next.stateAttempt },
  { type: 'integer', value: ([, next]) => next.attempts },
  { type: 'integer', value: ([, next]) => next.lastSmtpCode },
  { type: 'text', value: ([, next]) => next.lastSmtpResponse },
  { type: 'text', value: ([, next]) => next.failureReason },
];

/** Pads a short batch (platform batchRows): no message has id 0, so it moves nothing. */
const noMessage: Advanced = [0, { state: 'queued', stateAttempt: 0, attempts: 0, lastSmtpCode: null, lastSmtpResponse: null, failureReason: null }];

/** Writes the progress each moved message ended at, in one statement. */
async function advanceMessages(client: PoolClient, advanced: ReadonlyMap<number, MessageProgress>): Promise<void> {
  const moved = batchRows('event-advance-batch', [...advanced], advanceColumns, { filler: noMessage });
  await client.query({
    name: moved.name,
    text: `UPDATE messages AS m
              SET state = n.state, state_attempt = n.state_attempt, attempts = n.attempts, last_smtp_code = n.last_smtp_code,
                  last_smtp_response = n.last_smtp_response, failure_reason = n.failure_reason, updated_at = now()
             FROM ${moved.rows} AS n (id, state, state_attempt, attempts, last_smtp_code, last_smtp_response, failure_reason)
            WHERE m.id = n.id`,
    values: moved.values,
  });
}

/**
 * What each applied move adds to (docs/contract.md, "Statistics"): an acceptance by the relay is `sent` and, until a
 * bounce about it arrives, `delivered`; each deferral of an attempt, and a message ending failed, count once.
 */
const countedAs: Readonly<Record<DeliveryEvent['state'], readonly StatsChange['counter'][]>> = {
  sending: [],
  deferred: ['deferred'],
  sent: ['sent', 'delivered'],
  failed: ['failed'],
};

/**
 * An event of a batch and its outcome, with what the caller passed along with the event (its NATS message);
 * `suppressed` when applying it put its recipient on the project's suppression list (a hard bounce at the relay).
 */
export type Applied<T> = T & { outcome: StoredOutcome; suppressed?: true };

/**
 * Applies the events of `batch`, given in the order they were received, in one transaction; returns each item with
 * its event's outcome, in the same order. A message's events are decided on in lifecycle order (attempt, then state),
 * each from the progress the one before left, so events that arrive together (`sent` with its own `sending`) all move
 * the message, while events after a terminal state or of an earlier attempt are recorded without moving it, as when
 * they arrive one by one. It all commits or nothing does.
 */
export async function applyDeliveryEvents<T extends { readonly event: DeliveryEvent }>(pool: Pool, batch: readonly T[]): Promise<Applied<T>[]> {
  if (batch.length === 0) return [];
  return withTransaction(pool, async (client) => {
    const { progress: locked, erased, projects } = await lockMessages(client, [...new Set(batch.map(({ event }) => event.messageId))]);
    // A message erased while its job was under way: the relay's reply may quote the address the message no longer has.
    const received = erased.size === 0 ? batch : batch.map((item) => (erased.has(item.event.messageId) ? { ...item, event: scrubbedEvent(item.event) } : item));
    // An event of a known message is a duplicate unless this batch is the one that records it.
    const results = received.map((item): Applied<T> => ({ ...item, outcome: locked.has(item.event.messageId) ? 'duplicate' : 'unknown_message' }));
    // Grouped by message, the first copy of each (message, attempt, state) received: the one recorded, if any is.
    const byMessage = new Map<number, Applied<T>[]>();
    const firstCopies = new Set<string>();
    for (const result of results) {
      const key = eventKey(result.event);
      if (result.outcome === 'unknown_message' || firstCopies.has(key)) continue;
      firstCopies.add(key);
      const received = byMessage.get(result.event.messageId);
      if (received) received.push(result);
      else byMessage.set(result.event.messageId, [result]);
    }
    if (byMessage.size === 0) return results;

    // Sorting is stable: ties in lifecycle order (`sent` and `failed` of one attempt) go to the event received first.
    for (const received of byMessage.values()) received.sort((a, b) => compareLifecycle(a.event, b.event));
    const recorded = await recordEvents(
      client,
      [...byMessage.values()].flatMap((received) => received.map(({ event }) => event)),
    );

    const advanced = new Map<number, MessageProgress>();
    const moves: DeliveryEvent[] = [];
    for (const [id, progress] of locked) {
      let current = progress;
      for (const result of byMessage.get(id) ?? []) {
        // Already recorded means already decided on: the first copy either moved the message or could not.
        if (!recorded.has(eventKey(result.event))) continue;
        const decision = advance(current, result.event);
        if (!decision.apply) {
          result.outcome = 'recorded';
          continue;
        }
        current = decision.next;
        advanced.set(id, current);
        moves.push(result.event);
        result.outcome = 'applied';
      }
    }
    if (advanced.size > 0) {
      await advanceMessages(client, advanced);
      // In this transaction: a state change and the webhook event reporting it commit together or not at all.
      await recordWebhookEvents(client, moves);
      // And the suppression of an address a failure proved not to exist.
      // An erased message has no address left to suppress (an entry it had before is kept as a hash).
      const suppressed = await suppressHardBounces(
        client,
        moves
          .filter((event) => event.state === 'failed' && event.suppression === 'hard_bounce' && !erased.has(event.messageId))
          .map((event) => event.messageId),
      );
      for (const result of results) {
        if (result.outcome === 'applied' && result.event.state === 'failed' && suppressed.has(result.event.messageId)) result.suppressed = true;
      }
      // And the statistics: only a move counts, so an event seen again (recorded, duplicate) is never counted twice.
      await countStats(
        client,
        moves.flatMap((event) =>
          countedAs[event.state].map((counter) => ({
            projectId: projects.get(event.messageId) ?? 0,
            messageId: event.messageId,
            counter,
            delta: 1,
            at: event.occurredAt,
          })),
        ),
      );
    }
    return results;
  });
}

/** Applies one event on its own: a batch of one. */
export async function applyDeliveryEvent(pool: Pool, event: DeliveryEvent): Promise<StoredOutcome> {
  const [result] = await applyDeliveryEvents(pool, [{ event }]);
  if (!result) throw new Error('a batch of one event gave no outcome');
  return result.outcome;
}
