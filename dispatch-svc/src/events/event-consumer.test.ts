// The events consumer against real NATS and PostgreSQL: events are applied in batches of what was received together,
// one transaction each, acked after its commit and nak'd whole when it fails; malformed events are terminated alone.
// A mailer's batch of events is one message: acked once all its events are stored.
import assert from 'node:assert/strict';
import { Writable } from 'node:stream';
import { after, before, test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { createLogger } from '@notify/platform';
import { schemaHeaders } from '@notify/platform/nats';
import { type DeliveryEvent, deliveryEventId, encodeDeliveryEvent, encodeDeliveryEventBatch } from '@notify/proto';
import { waitFor } from '@notify/test/harness/wait.ts';
import { type Harness, startHarness } from '../testing/harness.ts';
import { type EventConsumer, startEventConsumer } from './event-consumer.ts';

let h: Harness;
let consumer: EventConsumer;
const logLines: Record<string, unknown>[] = [];
const logger = createLogger(
  'dispatch-test',
  'debug',
  new Writable({
    write: (chunk: Buffer, _encoding, done) => {
      for (const line of chunk.toString().split('\n').filter(Boolean)) logLines.push(JSON.parse(line) as Record<string, unknown>);
      done();
    },
  }),
);

/**
 * Test-only hooks that run when a transaction that recorded an event with one of these reasons commits: `test: hold …`
 * waits at COMMIT while the test holds the advisory lock of that name, `test: refuse …` makes COMMIT fail while it does.
 */
const commitHooks = `
  CREATE FUNCTION test_commit_hook() RETURNS trigger LANGUAGE plpgsql AS $$
  BEGIN
    IF NEW.reason LIKE 'test: hold %' THEN
      PERFORM pg_advisory_xact_lock(hashtext(NEW.reason));
    ELSIF NEW.reason LIKE 'test: refuse %' AND NOT pg_try_advisory_xact_lock_shared(hashtext(NEW.reason)) THEN
      RAISE EXCEPTION 'commit refused by the test';
    END IF;
    RETURN NULL;
  END $$;
  CREATE CONSTRAINT TRIGGER test_commit_hook AFTER INSERT ON message_events DEFERRABLE INITIALLY DEFERRED
    FOR EACH ROW EXECUTE FUNCTION test_commit_hook();
`;

before(async () => {
  h = await startHarness();
  await h.pool.query(commitHooks);
  await h.admin.call('PutTemplate', { projectId: h.ids.projectId, slug: 'welcome', subject: 'Hi', text: 'Hi', active: true });
  consumer = startEventConsumer({ js: h.js, names: h.names, pool: h.pool, metrics: h.metrics, logger, maxBatchSize: 16 });
});

after(async () => {
  for (const release of heldLocks) await release();
  await consumer.stop();
  await h.close();
});

const newMessage = (): Promise<number> => h.acceptMessage();

/**
 * Publishes an event as the mailer does, or text as a writer without a schema header (refused); `dedupe: false`
 * publishes without Nats-Msg-Id, so the stream keeps a second copy.
 */
async function publish(messageId: number, event: DeliveryEvent | string, dedupe = true): Promise<void> {
  const subject = h.names.eventsSubject(messageId);
  if (typeof event === 'string') {
    await h.js.publish(subject, new TextEncoder().encode(event));
    return;
  }
  const message = encodeDeliveryEvent(event);
  await h.js.publish(subject, message.bytes, { headers: schemaHeaders(message), ...(dedupe ? { msgID: deliveryEventId(event) } : {}) });
}

/** The reasons of the dead letters written for events so far. */
async function deadLetterReasons(): Promise<string[]> {
  const reasons: string[] = [];
  const { last_seq: last } = (await h.jsm.streams.info(h.names.deadLettersStream)).state;
  for (let seq = 1; seq <= last; seq += 1) {
    const stored = await h.jsm.streams.getMessage(h.names.deadLettersStream, { seq }).catch(() => null);
    if (stored?.subject === h.names.deadLettersSubject('events')) reasons.push(stored.header.get('Notify-Dead-Letter-Reason'));
  }
  return reasons;
}

const consumerInfo = () => h.jsm.consumers.info(h.names.eventsStream, h.names.eventsConsumer);

/** Waits until the consumer has acked or terminated everything published so far. */
async function settled(timeoutMs = 5_000): Promise<void> {
  await waitFor(
    async () => {
      const info = await consumerInfo();
      return info.num_pending === 0 && info.num_ack_pending === 0;
    },
    { timeoutMs, intervalMs: 25, what: 'the events consumer to settle' },
  );
}

/** Waits until the server has handed out `count` events it has no acknowledgement for, then lets the client read them. */
async function inHand(count: number): Promise<void> {
  await waitFor(
    async () => {
      const info = await consumerInfo();
      return info.num_pending === 0 && info.num_ack_pending === count;
    },
    { timeoutMs: 5_000, intervalMs: 25, what: `${count} events handed out` },
  );
  await sleep(500);
}

/** Locks still held by a test, released before the consumer stops even if that test failed half-way. */
const heldLocks = new Set<() => Promise<void>>();

/** Holds the advisory lock a `test: hold <name>` or `test: refuse <name>` hook looks at; resolves to its release. */
async function holdLock(reason: string): Promise<() => Promise<void>> {
  const client = await h.pool.connect();
  await client.query('SELECT pg_advisory_lock(hashtext($1))', [reason]);
  const release = async (): Promise<void> => {
    if (!heldLocks.delete(release)) return;
    await client.query('SELECT pg_advisory_unlock(hashtext($1))', [reason]);
    client.release();
  };
  heldLocks.add(release);
  return release;
}

/** Transactions of this database waiting for an advisory lock: a batch held at its COMMIT. */
async function heldCommits(): Promise<number> {
  const found = await h.pool.query<{ count: number }>(
    `SELECT count(*)::int AS count FROM pg_locks l JOIN pg_database d ON d.oid = l.database
      WHERE l.locktype = 'advisory' AND NOT l.granted AND d.datname = current_database()`,
  );
  return found.rows[0]?.count ?? 0;
}

const stateOf = async (messageId: number): Promise<string | undefined> =>
  (await h.pool.query<{ state: string }>('SELECT state FROM messages WHERE id = $1', [messageId])).rows[0]?.state;

const eventRows = async (messageId: number): Promise<string[]> =>
  (await h.pool.query<{ key: string }>(`SELECT state || ':' || attempt AS key FROM message_events WHERE message_id = $1 ORDER BY id`, [messageId])).rows.map(
    (row) => row.key,
  );

/** notify_delivery_events_total by outcome; the tests compare before and after, the counter being shared. */
async function outcomeCounts(): Promise<Record<string, number>> {
  const { values } = await h.metrics.deliveryEvents.get();
  return Object.fromEntries(values.map(({ labels, value }) => [String(labels.outcome), value]));
}

async function outcomesSince(before: Record<string, number>): Promise<Record<string, number>> {
  const now = await outcomeCounts();
  return Object.fromEntries(
    Object.entries(now)
      .map(([outcome, value]): [string, number] => [outcome, value - (before[outcome] ?? 0)])
      .filter(([, value]) => value > 0),
  );
}

const at = (second: number): string => new Date(Date.UTC(2025, 0, 1, 0, 0, second)).toISOString();

test('events applied out of order and twice, one at a time, end in the right state with one row each', async () => {
  const messageId = await newMessage();
  const before = await outcomeCounts();
  const sent: DeliveryEvent = { messageId, state: 'sent', attempt: 2, occurredAt: at(4), smtpCode: 250, smtpResponse: '250 2.0.0 OK' };
  // Each settled before the next, so each is a batch of its own and meets the row the one before left.
  const arrivals: [DeliveryEvent, boolean][] = [
    [sent, true],
    [{ messageId, state: 'deferred', attempt: 1, occurredAt: at(2), smtpCode: 451, smtpResponse: '451 try later', reason: 'greylisted' }, true],
    [{ messageId, state: 'sending', attempt: 1, occurredAt: at(1) }, true],
    [{ messageId, state: 'sending', attempt: 2, occurredAt: at(3) }, true],
    [sent, false],
    [{ messageId, state: 'sending', attempt: 1, occurredAt: at(1) }, false],
  ];
  for (const [event, dedupe] of arrivals) {
    await publish(messageId, event, dedupe);
    await settled();
  }

  const row = (
    await h.pool.query('SELECT state, state_attempt, attempts, last_smtp_code, last_smtp_response, failure_reason FROM messages WHERE id = $1', [messageId])
  ).rows[0];
  assert.deepEqual(row, { state: 'sent', state_attempt: 2, attempts: 2, last_smtp_code: 250, last_smtp_response: '250 2.0.0 OK', failure_reason: null });
  assert.deepEqual((await eventRows(messageId)).sort(), ['deferred:1', 'queued:0', 'sending:1', 'sending:2', 'sent:2']);
  // Only the first event moved the message, the late ones were recorded without moving it, the copies were recognised.
  assert.deepEqual(await outcomesSince(before), { applied: 1, recorded: 3, duplicate: 2 });
});

test('a failure is final: a later event does not move a failed message', async () => {
  const messageId = await newMessage();
  const occurredAt = new Date().toISOString();
  await publish(messageId, { messageId, state: 'sending', attempt: 1, occurredAt });
  await publish(messageId, {
    messageId,
    state: 'failed',
    attempt: 1,
    occurredAt,
    smtpCode: 550,
    smtpResponse: '550 5.1.1 no such user',
    reason: 'recipient rejected',
  });
  await settled();
  await publish(messageId, { messageId, state: 'sending', attempt: 2, occurredAt });
  await settled();
  const message = await h.dispatch.call('GetMessage', { projectId: h.ids.projectId, organizationId: h.ids.organizationId, messageId });
  assert.equal(message.state, 'failed');
  assert.equal(message.failureReason, 'recipient rejected');
  assert.equal(message.attempts, 1);
  assert.deepEqual(
    message.events.map((event) => `${event.state}:${event.attempt}`),
    ['queued:0', 'sending:1', 'failed:1', 'sending:2'],
  );
});

test('malformed events are dead-lettered and terminated, events for unknown messages acked, and neither stops the consumer', async () => {
  const messageId = await newMessage();
  const before = await outcomeCounts();
  const lettersBefore = (await deadLetterReasons()).length;
  await publish(messageId, 'no schema header');
  await publish(messageId, { messageId, state: 'delivered' as DeliveryEvent['state'], attempt: 1, occurredAt: new Date().toISOString() });
  await publish(999_999, { messageId: 999_999, state: 'sending', attempt: 1, occurredAt: new Date().toISOString() });
  await publish(messageId, { messageId, state: 'sending', attempt: 1, occurredAt: new Date().toISOString() });
  await settled();
  assert.deepEqual(await outcomesSince(before), { malformed: 2, unknown_message: 1, applied: 1 });
  assert.deepEqual((await deadLetterReasons()).slice(lettersBefore), [
    'malformed event: schema (none) is not notify.messaging.v1.DeliveryEvent',
    'malformed event: invalid state',
  ]);
  const message = await h.dispatch.call('GetMessage', { projectId: h.ids.projectId, organizationId: h.ids.organizationId, messageId });
  assert.equal(message.state, 'sending');
  assert.equal((await h.jsm.streams.info(h.names.eventsStream)).state.messages, 0, 'nothing is left to redeliver');
});

test('the events received while a batch commits are applied together in the next one, and acked only after its commit', async () => {
  const [a, b, c] = [await newMessage(), await newMessage(), await newMessage()];
  const releaseFirst = await holdLock('test: hold first');
  const releaseSecond = await holdLock('test: hold second');
  const before = await outcomeCounts();

  // The first batch: one event, its COMMIT held.
  await publish(a, { messageId: a, state: 'sending', attempt: 1, occurredAt: at(1), reason: 'test: hold first' });
  await waitFor(async () => (await heldCommits()) === 1, { timeoutMs: 5_000, intervalMs: 25, what: 'the first batch to wait at its commit' });

  // Everything published meanwhile is received while the first batch commits.
  await publish(b, { messageId: b, state: 'sent', attempt: 1, occurredAt: at(3), smtpCode: 250, smtpResponse: '250 OK' });
  await publish(c, { messageId: c, state: 'sending', attempt: 1, occurredAt: at(2) });
  // Not the unknown message of the test above: the stream would drop this as a copy of its event.
  await publish(999_998, { messageId: 999_998, state: 'sending', attempt: 1, occurredAt: at(2) });
  await publish(a, { messageId: a, state: 'deferred', attempt: 1, occurredAt: at(2), smtpCode: 451, smtpResponse: '451 later', reason: 'greylisted' });
  await publish(c, 'no schema header');
  await publish(b, { messageId: b, state: 'sending', attempt: 1, occurredAt: at(2), reason: 'test: hold second' });
  const cSent: DeliveryEvent = { messageId: c, state: 'sent', attempt: 1, occurredAt: at(3), smtpCode: 250, smtpResponse: '250 OK' };
  await publish(c, cSent);
  await publish(c, cSent, false);
  await inHand(9);
  assert.equal(await stateOf(a), 'queued', 'the first batch is not committed yet');

  // The first batch commits and is acked; the second, all eight events, waits at its own COMMIT.
  await releaseFirst();
  await waitFor(async () => (await stateOf(a)) === 'sending' && (await heldCommits()) === 1, {
    timeoutMs: 5_000,
    intervalMs: 25,
    what: 'the second batch to wait at its commit',
  });
  // Acked: the first batch's event, and the malformed one, terminated on its own before the transaction.
  await waitFor(async () => (await consumerInfo()).num_ack_pending === 7, { timeoutMs: 5_000, intervalMs: 25, what: 'the first batch acked' });
  await sleep(300);
  assert.equal((await consumerInfo()).num_ack_pending, 7, 'no event of the second batch is acked before its commit');
  assert.deepEqual(await eventRows(b), ['queued:0'], 'nor visible');
  assert.deepEqual(await eventRows(c), ['queued:0']);

  await releaseSecond();
  await settled();
  assert.equal(await stateOf(a), 'deferred');
  assert.equal(await stateOf(b), 'sent', 'sent received before its own sending, in the same batch');
  assert.equal(await stateOf(c), 'sent');
  assert.deepEqual(await eventRows(b), ['queued:0', 'sending:1', 'sent:1']);
  assert.deepEqual(await eventRows(c), ['queued:0', 'sending:1', 'sent:1']);
  const writers = await h.pool.query<{ count: number }>(
    `SELECT count(DISTINCT xmin::text)::int AS count FROM message_events
      WHERE (message_id = ANY($1::bigint[]) AND state <> 'queued') OR (message_id = $2 AND state = 'deferred')`,
    [[b, c], a],
  );
  assert.equal(writers.rows[0]?.count, 1, 'the second batch was one transaction');
  assert.deepEqual(await outcomesSince(before), { applied: 6, duplicate: 1, unknown_message: 1, malformed: 1 });
});

test("an event received alone waits 100 ms for more before its batch is applied, so a message's next event can share its transaction", async () => {
  const message = await newMessage();
  // After a batch the consumer waits the linger before it starts another: well past the last test's, nothing waits.
  await sleep(300);
  // The database's clock on both sides: the event is received after this moment, and applied at least the linger later.
  const before = (await h.pool.query<{ at: Date }>('SELECT clock_timestamp() AS at')).rows[0]?.at as Date;
  await publish(message, { messageId: message, state: 'sending', attempt: 1, occurredAt: at(1) });
  await settled();
  assert.equal(await stateOf(message), 'sending');
  const applied = (await h.pool.query<{ at: Date }>('SELECT updated_at AS at FROM messages WHERE id = $1', [message])).rows[0]?.at as Date;
  // 100 ms, less a few for the timer's and the clocks' rounding; at the old 20 ms a quiet machine applies it within 40.
  assert.ok(applied.getTime() - before.getTime() >= 95, `applied ${applied.getTime() - before.getTime()} ms after it was published`);
});

test("a batch whose transaction fails is nak'd whole, and applied when it is offered again", async () => {
  const [a, b, c] = [await newMessage(), await newMessage(), await newMessage()];
  const releaseHold = await holdLock('test: hold third');
  const releaseRefusal = await holdLock('test: refuse first');

  await publish(a, { messageId: a, state: 'sending', attempt: 1, occurredAt: at(1), reason: 'test: hold third' });
  await waitFor(async () => (await heldCommits()) === 1, { timeoutMs: 5_000, intervalMs: 25, what: 'the first batch to wait at its commit' });
  await publish(b, { messageId: b, state: 'sending', attempt: 1, occurredAt: at(1), reason: 'test: refuse first' });
  await publish(c, { messageId: c, state: 'sending', attempt: 1, occurredAt: at(1) });
  await publish(c, { messageId: c, state: 'sent', attempt: 1, occurredAt: at(2), smtpCode: 250, smtpResponse: '250 OK' });
  await inHand(4);

  const notStored = () => logLines.filter((line) => line.msg === 'delivery event not stored; it will be redelivered');
  const failuresBefore = notStored().length;
  await releaseHold();
  await waitFor(async () => notStored().length === failuresBefore + 3, { timeoutMs: 5_000, intervalMs: 25, what: 'the batch to fail' });
  const failures = notStored().slice(failuresBefore);
  assert.deepEqual(failures.map((line) => line.messageId).sort(), [b, c, c].sort(), 'every event of the batch is offered again');
  assert.equal(new Set(failures.map((line) => line.streamSequence)).size, 3);
  assert.deepEqual(await eventRows(b), ['queued:0'], 'nothing of the failed batch was kept');
  assert.deepEqual(await eventRows(c), ['queued:0']);
  assert.equal(await stateOf(c), 'queued');

  await releaseRefusal();
  await settled(10_000);
  assert.equal(await stateOf(b), 'sending');
  assert.equal(await stateOf(c), 'sent');
  assert.deepEqual(await eventRows(c), ['queued:0', 'sending:1', 'sent:1']);
  assert.equal(notStored().length, failuresBefore + 3, 'the batch failed only while its commit was refused');
});

test("a mailer's batch of events is applied in one transaction, and one unreadable event dead-letters the batch without costing the others", async () => {
  const [a, b] = [await newMessage(), await newMessage()];
  const before = await outcomeCounts();
  const lettersBefore = (await deadLetterReasons()).length;
  const traceparent = '00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01';
  const batch = encodeDeliveryEventBatch([
    { event: { messageId: a, state: 'sending', attempt: 1, occurredAt: at(1) }, traceparent },
    { event: { messageId: b, state: 'sending', attempt: 1, occurredAt: at(1) }, traceparent: '' },
    { event: { messageId: a, state: 'sent', attempt: 1, occurredAt: at(2), smtpCode: 250, smtpResponse: '250 OK' }, traceparent },
  ]);
  await h.js.publish(h.names.eventBatchesSubject, batch.bytes, { headers: schemaHeaders(batch) });
  await settled();
  assert.equal(await stateOf(a), 'sent');
  assert.equal(await stateOf(b), 'sending');
  const writers = await h.pool.query<{ count: number }>(
    `SELECT count(DISTINCT xmin::text)::int AS count FROM message_events WHERE message_id = ANY($1::bigint[]) AND state <> 'queued'`,
    [[a, b]],
  );
  assert.equal(writers.rows[0]?.count, 1, 'the batch was one transaction');

  // An event a reader cannot read (a state no release knows) inside a batch: the batch's bytes are kept as a dead
  // letter naming it, the other event is applied, and the batch is acked rather than offered again.
  const mixed = encodeDeliveryEventBatch([
    { event: { messageId: b, state: 'delivered' as DeliveryEvent['state'], attempt: 1, occurredAt: at(3) }, traceparent: '' },
    { event: { messageId: b, state: 'sent', attempt: 1, occurredAt: at(3), smtpCode: 250, smtpResponse: '250 OK' }, traceparent: '' },
  ]);
  await h.js.publish(h.names.eventBatchesSubject, mixed.bytes, { headers: schemaHeaders(mixed) });
  await settled();
  assert.equal(await stateOf(b), 'sent');
  assert.deepEqual((await deadLetterReasons()).slice(lettersBefore), ['malformed event: invalid state']);
  assert.deepEqual(await outcomesSince(before), { applied: 4, malformed: 1 });
  assert.equal((await h.jsm.streams.info(h.names.eventsStream)).state.messages, 0, 'nothing is left to redeliver');
});
