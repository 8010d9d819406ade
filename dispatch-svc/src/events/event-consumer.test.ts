import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { deliveryEventId, type DeliveryEvent } from '@notify/proto';
import { eventually, startHarness, type Harness } from '../testing/harness.ts';
import { startEventConsumer, type EventConsumer } from './event-consumer.ts';

let h: Harness;
let consumer: EventConsumer;

before(async () => {
  h = await startHarness();
  await h.admin.call('PutTemplate', { projectId: h.ids.projectId, slug: 'welcome', subject: 'Hi', text: 'Hi', active: true });
  consumer = startEventConsumer({ js: h.js, names: h.names, pool: h.pool, metrics: h.metrics, logger: h.logger, concurrency: 4 });
});

after(async () => {
  await consumer.stop();
  await h.close();
});

async function newMessage(): Promise<number> {
  const response = await h.dispatch.call('Send', {
    projectId: h.ids.projectId,
    organizationId: h.ids.organizationId,
    apiKeyId: h.ids.apiKeyId,
    template: 'welcome',
    to: 'ada@example.com',
    dataJson: '{}',
  });
  return response.messageId;
}

const encode = (value: unknown): Uint8Array => new TextEncoder().encode(typeof value === 'string' ? value : JSON.stringify(value));

/** Publishes as the mailer does; `dedupe: false` publishes without Nats-Msg-Id, so the stream keeps a second copy. */
async function publish(messageId: number, event: DeliveryEvent | string, dedupe = true): Promise<void> {
  const options = typeof event !== 'string' && dedupe ? { msgID: deliveryEventId(event) } : {};
  await h.js.publish(h.names.eventsSubject(messageId), encode(event), options);
}

/** Waits until the consumer has acked or terminated everything published so far. */
async function settled(): Promise<void> {
  await eventually(async () => {
    const info = await h.jsm.consumers.info(h.names.eventsStream, h.names.eventsConsumer);
    return info.num_pending === 0 && info.num_ack_pending === 0;
  }, 5_000, 'the events consumer to settle');
}

const eventRows = async (messageId: number): Promise<string[]> =>
  (await h.pool.query<{ key: string }>(`SELECT state || ':' || attempt AS key FROM message_events WHERE message_id = $1 ORDER BY id`, [messageId])).rows.map(
    (row) => row.key,
  );

test('events applied out of order and twice end in the right state with one row each', async () => {
  const messageId = await newMessage();
  const at = (second: number): string => new Date(Date.UTC(2025, 0, 1, 0, 0, second)).toISOString();
  const sent: DeliveryEvent = { messageId, state: 'sent', attempt: 2, occurredAt: at(4), smtpCode: 250, smtpResponse: '250 2.0.0 OK' };
  await publish(messageId, sent);
  await publish(messageId, { messageId, state: 'deferred', attempt: 1, occurredAt: at(2), smtpCode: 451, smtpResponse: '451 try later', reason: 'greylisted' });
  await publish(messageId, { messageId, state: 'sending', attempt: 1, occurredAt: at(1) });
  await publish(messageId, { messageId, state: 'sending', attempt: 2, occurredAt: at(3) });
  await publish(messageId, sent, false);
  await publish(messageId, { messageId, state: 'sending', attempt: 1, occurredAt: at(1) }, false);
  await settled();

  const row = (await h.pool.query('SELECT state, state_attempt, attempts, last_smtp_code, last_smtp_response, failure_reason FROM messages WHERE id = $1', [messageId])).rows[0];
  assert.deepEqual(row, { state: 'sent', state_attempt: 2, attempts: 2, last_smtp_code: 250, last_smtp_response: '250 2.0.0 OK', failure_reason: null });
  assert.deepEqual((await eventRows(messageId)).sort(), ['deferred:1', 'queued:0', 'sending:1', 'sending:2', 'sent:2']);
  const metrics = await h.registry.getSingleMetricAsString('notify_delivery_events_total');
  assert.match(metrics, /outcome="applied"[^}]*\} 1(\n|$)/, 'only the first event moved the message');
  assert.match(metrics, /outcome="recorded"[^}]*\} 3(\n|$)/, 'the late ones were recorded without moving it');
  assert.match(metrics, /outcome="duplicate"[^}]*\} 2(\n|$)/, 'the copies were recognised');
});

test('a failure is final: a later event does not move a failed message', async () => {
  const messageId = await newMessage();
  const occurredAt = new Date().toISOString();
  await publish(messageId, { messageId, state: 'sending', attempt: 1, occurredAt });
  await publish(messageId, { messageId, state: 'failed', attempt: 1, occurredAt, smtpCode: 550, smtpResponse: '550 5.1.1 no such user', reason: 'recipient rejected' });
  await settled();
  await publish(messageId, { messageId, state: 'sending', attempt: 2, occurredAt });
  await settled();
  const message = await h.dispatch.call('GetMessage', { projectId: h.ids.projectId, messageId });
  assert.equal(message.state, 'failed');
  assert.equal(message.failureReason, 'recipient rejected');
  assert.equal(message.attempts, 1);
  assert.deepEqual(
    message.events.map((event) => `${event.state}:${event.attempt}`),
    ['queued:0', 'sending:1', 'failed:1', 'sending:2'],
  );
});

test('malformed events are terminated and events for unknown messages are acked, and neither stops the consumer', async () => {
  const messageId = await newMessage();
  await publish(messageId, 'not json at all');
  await publish(messageId, JSON.stringify({ messageId, state: 'delivered', attempt: 1, occurredAt: new Date().toISOString() }));
  await publish(999_999, { messageId: 999_999, state: 'sending', attempt: 1, occurredAt: new Date().toISOString() });
  await publish(messageId, { messageId, state: 'sending', attempt: 1, occurredAt: new Date().toISOString() });
  await settled();
  const metrics = await h.registry.getSingleMetricAsString('notify_delivery_events_total');
  assert.match(metrics, /outcome="malformed"[^}]*\} 2(\n|$)/);
  assert.match(metrics, /outcome="unknown_message"[^}]*\} 1(\n|$)/);
  const message = await h.dispatch.call('GetMessage', { projectId: h.ids.projectId, messageId });
  assert.equal(message.state, 'sending');
  assert.equal((await h.jsm.streams.info(h.names.eventsStream)).state.messages, 0, 'nothing is left to redeliver');
});
