// The event store against a real PostgreSQL: a batch of delivery events is applied in one transaction, records each
// event once, and ends each message where its events applied one at a time in lifecycle order would.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { createPool } from '@notify/platform/database';
import type { DeliveryEvent } from '@notify/proto';
import { plannedAfterWarmUp } from '@notify/test/harness/prepared-plans.ts';
import { type Harness, startHarness } from '../testing/harness.ts';
import { applyDeliveryEvents, type StoredOutcome } from './event-store.ts';

let h: Harness;

before(async () => {
  h = await startHarness();
  await h.admin.call('PutTemplate', { projectId: h.ids.projectId, slug: 'welcome', subject: 'Hi', text: 'Hi', active: true });
});

after(async () => {
  await h.close();
});

const newMessage = (): Promise<number> => h.acceptMessage();

const newMessages = async (count: number): Promise<number[]> => {
  const ids: number[] = [];
  for (let made = 0; made < count; made += 1) ids.push(await newMessage());
  return ids;
};

const at = (second: number): string => new Date(Date.UTC(2025, 0, 1, 0, 0, second)).toISOString();
const sending = (messageId: number, attempt: number): DeliveryEvent => ({ messageId, state: 'sending', attempt, occurredAt: at(attempt * 10) });
const deferred = (messageId: number, attempt: number, reason = 'greylisted'): DeliveryEvent => ({
  messageId,
  state: 'deferred',
  attempt,
  occurredAt: at(attempt * 10 + 1),
  smtpCode: 451,
  smtpResponse: '451 4.7.1 try later',
  reason,
});
const sent = (messageId: number, attempt: number): DeliveryEvent => ({
  messageId,
  state: 'sent',
  attempt,
  occurredAt: at(attempt * 10 + 2),
  smtpCode: 250,
  smtpResponse: '250 2.0.0 OK',
});
const failed = (messageId: number, attempt: number): DeliveryEvent => ({
  messageId,
  state: 'failed',
  attempt,
  occurredAt: at(attempt * 10 + 2),
  smtpCode: 550,
  smtpResponse: '550 5.1.1 no such user',
  reason: 'recipient rejected',
});

async function apply(events: DeliveryEvent[]): Promise<StoredOutcome[]> {
  return (
    await applyDeliveryEvents(
      h.pool,
      events.map((event) => ({ event })),
    )
  ).map(({ outcome }) => outcome);
}

interface Row {
  state: string;
  state_attempt: number;
  attempts: number;
  last_smtp_code: number | null;
  last_smtp_response: string | null;
  failure_reason: string | null;
}

async function row(messageId: number): Promise<Row | undefined> {
  const found = await h.pool.query<Row>(
    'SELECT state, state_attempt, attempts, last_smtp_code, last_smtp_response, failure_reason FROM messages WHERE id = $1',
    [messageId],
  );
  return found.rows[0];
}

const eventRows = async (messageId: number): Promise<string[]> =>
  (await h.pool.query<{ key: string }>(`SELECT state || ':' || attempt AS key FROM message_events WHERE message_id = $1 ORDER BY id`, [messageId])).rows.map(
    (found) => found.key,
  );

/** How many transactions wrote the delivery events of these messages (their `queued` events were written on Send). */
async function writers(messageIds: number[]): Promise<number> {
  const found = await h.pool.query<{ count: number }>(
    `SELECT count(DISTINCT xmin::text)::int AS count FROM message_events WHERE message_id = ANY($1::bigint[]) AND state <> 'queued'`,
    [messageIds],
  );
  return found.rows[0]?.count ?? 0;
}

const sentAt = (attempt: number): Row => ({
  state: 'sent',
  state_attempt: attempt,
  attempts: attempt,
  last_smtp_code: 250,
  last_smtp_response: '250 2.0.0 OK',
  failure_reason: null,
});

test('one batch moves several messages, each as far as its own events go, in one transaction', async () => {
  const [a, b, c] = [await newMessage(), await newMessage(), await newMessage()];
  const outcomes = await apply([sending(a, 1), sending(b, 1), deferred(c, 1), sent(a, 1), failed(b, 1), sending(c, 2)]);
  assert.deepEqual(outcomes, ['applied', 'applied', 'applied', 'applied', 'applied', 'applied']);
  assert.deepEqual(await row(a), sentAt(1));
  assert.deepEqual(await row(b), {
    state: 'failed',
    state_attempt: 1,
    attempts: 1,
    last_smtp_code: 550,
    last_smtp_response: '550 5.1.1 no such user',
    failure_reason: 'recipient rejected',
  });
  assert.deepEqual(await row(c), {
    state: 'sending',
    state_attempt: 2,
    attempts: 2,
    last_smtp_code: 451,
    last_smtp_response: '451 4.7.1 try later',
    failure_reason: 'greylisted',
  });
  assert.equal(await writers([a, b, c]), 1);
});

test("a message's events in one batch apply in lifecycle order, whatever order they arrived in", async () => {
  const [early, inOrder] = [await newMessage(), await newMessage()];
  assert.deepEqual(await apply([sent(early, 1), sending(early, 1)]), ['applied', 'applied'], 'sent arriving before its sending');
  assert.deepEqual(await apply([sending(inOrder, 1), sent(inOrder, 1)]), ['applied', 'applied'], 'sent arriving after its sending');
  assert.deepEqual(await row(early), sentAt(1));
  assert.deepEqual(await row(inOrder), sentAt(1));

  // Every arrival order of a delivery that was deferred once, all in one batch: each ends as the delivery did.
  const orders = (items: DeliveryEvent[]): DeliveryEvent[][] =>
    items.length <= 1 ? [items] : items.flatMap((item, index) => orders(items.filter((_, other) => other !== index)).map((rest) => [item, ...rest]));
  const permutations = orders([sending(0, 1), deferred(0, 1), sending(0, 2), sent(0, 2)]);
  const ids = await newMessages(permutations.length);
  const batch: DeliveryEvent[] = [];
  for (const [index, id] of ids.entries()) {
    const order = permutations[index];
    assert.ok(order);
    batch.push(...order.map((event) => ({ ...event, messageId: id })));
  }
  const outcomes = await apply(batch);
  assert.deepEqual(new Set(outcomes), new Set(['applied']), 'each event moved its message one step');
  for (const id of ids) assert.deepEqual(await row(id), sentAt(2), `message ${id}`);
  assert.equal(await writers(ids), 1);
});

test('events after a terminal state are recorded without moving the message, in its batch and after it', async () => {
  const id = await newMessage();
  assert.deepEqual(await apply([sending(id, 2), sent(id, 1), sending(id, 1)]), ['recorded', 'applied', 'applied']);
  assert.deepEqual(await row(id), sentAt(1));
  assert.deepEqual(await apply([deferred(id, 1), failed(id, 2)]), ['recorded', 'recorded']);
  assert.deepEqual(await row(id), sentAt(1));
  assert.deepEqual((await eventRows(id)).sort(), ['deferred:1', 'failed:2', 'queued:0', 'sending:1', 'sending:2', 'sent:1']);
});

test('copies of an event are duplicates within a batch and across batches; the first received is the one kept', async () => {
  const id = await newMessage();
  assert.deepEqual(await apply([deferred(id, 1, 'first copy'), sending(id, 1), deferred(id, 1, 'second copy')]), ['applied', 'applied', 'duplicate']);
  assert.equal((await row(id))?.failure_reason, 'first copy');
  assert.deepEqual(await apply([deferred(id, 1, 'third copy'), sending(id, 1), sending(id, 2), sending(id, 2)]), [
    'duplicate',
    'duplicate',
    'applied',
    'duplicate',
  ]);
  const reasons = await h.pool.query<{ reason: string }>(`SELECT reason FROM message_events WHERE message_id = $1 AND state = 'deferred'`, [id]);
  assert.deepEqual(reasons.rows, [{ reason: 'first copy' }]);
  assert.deepEqual((await eventRows(id)).sort(), ['deferred:1', 'queued:0', 'sending:1', 'sending:2']);
  assert.equal((await row(id))?.state_attempt, 2);
});

test('an event for an unknown message is reported as such and the rest of its batch applies', async () => {
  const id = await newMessage();
  const unknown = id + 1_000_000;
  assert.deepEqual(await apply([sending(unknown, 1), sending(id, 1), sent(unknown, 1)]), ['unknown_message', 'applied', 'unknown_message']);
  assert.equal((await row(id))?.state, 'sending');
  assert.deepEqual(await eventRows(unknown), []);
});

test('batches naming the same messages in opposite orders wait for each other instead of deadlocking', async () => {
  const ids = await newMessages(5);
  const reversed = [...ids].reverse();
  // Eight batches at once, each with one attempt's `sending` for every message, half of them listing the messages backwards.
  const batches = Array.from({ length: 8 }, (_, index) => (index % 2 === 0 ? ids : reversed).map((id) => sending(id, index + 1)));
  const outcomes = (await Promise.all(batches.map((batch) => apply(batch)))).flat();
  assert.equal(outcomes.filter((outcome) => outcome === 'applied' || outcome === 'recorded').length, 40, 'every event recorded once');
  for (const id of ids) {
    const found = await row(id);
    assert.equal(found?.state_attempt, 8, 'the latest attempt wins whichever batch committed last');
    assert.equal((await eventRows(id)).length, 9);
  }
});

test('a batch that fails leaves nothing of it behind', async () => {
  const [a, b] = [await newMessage(), await newMessage()];
  // An attempt past PostgreSQL's integer: the insert of the whole batch fails, after the rows were locked.
  const outOfRange: DeliveryEvent = { ...sending(b, 1), attempt: 2 ** 31 };
  await assert.rejects(apply([sending(a, 1), sent(a, 1), outOfRange]), /out of range/);
  assert.equal((await row(a))?.state, 'queued');
  assert.deepEqual(await eventRows(a), ['queued:0']);
  assert.deepEqual(await eventRows(b), ['queued:0']);
});

test('events of a message alone or of a few together are applied by statements planned once per connection', async () => {
  const ids = await newMessages(6);
  await h.growMessages(ids, 2500);
  // One connection, so pg_prepared_statements (per session) sees every execution.
  const alone = createPool(String(h.pool.options.connectionString), { max: 1, applicationName: 'dispatch-test-plans', logger: h.logger });
  let attempt = 0;
  const applyRounds = async (rounds: number): Promise<void> => {
    for (let round = 0; round < rounds; round += 1) {
      attempt += 1;
      for (const batch of [ids.slice(0, 1), ids.slice(1, 4)]) {
        const applied = await applyDeliveryEvents(
          alone,
          batch.map((id) => ({ event: sending(id, attempt) })),
        );
        assert.deepEqual(
          applied.map(({ outcome }) => outcome),
          batch.map(() => 'applied'),
        );
      }
    }
  };
  try {
    assert.deepEqual(await plannedAfterWarmUp(alone, ['event-'], applyRounds), {
      'event-advance-batch': { generic: 4, custom: 0 },
      'event-advance-batch-one': { generic: 4, custom: 0 },
      'event-insert-batch': { generic: 8, custom: 0 },
      'event-lock-messages': { generic: 4, custom: 0 },
      'event-lock-messages-one': { generic: 4, custom: 0 },
    });
  } finally {
    await alone.end();
  }
  for (const id of ids.slice(0, 4))
    assert.deepEqual(await row(id), {
      state: 'sending',
      state_attempt: 10,
      attempts: 10,
      last_smtp_code: null,
      last_smtp_response: null,
      failure_reason: null,
    });
  assert.equal((await row(ids[4] as number))?.state, 'queued');
});
