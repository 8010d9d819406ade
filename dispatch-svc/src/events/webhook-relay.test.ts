// Webhook events against a real PostgreSQL and JetStream: recorded in the transaction that applies the state change,
// only for subscribed, enabled endpoints of the message's project, then published one message per delivery.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { type JetStreamPublisher, jetstream } from '@notify/platform/nats';
import { type DeliveryEvent, readWebhookDelivery, schemaHeader } from '@notify/proto';
import { plannedAfterWarmUp } from '@notify/test/harness/prepared-plans.ts';
import { type Harness, startHarness } from '../testing/harness.ts';
import { applyDeliveryEvents } from './event-store.ts';
import { recordMessageWebhookEvents } from './webhook-events.ts';
import { relayWebhookEvents, updateUnpublishedWebhookAge } from './webhook-relay.ts';

let h: Harness;
/** Publishes as dispatch-svc does (build.ts). */
let publisher: JetStreamPublisher;
let subscribed: number;
let failedOnly: number;

const endpoint = async (projectId: number, types: string[], enabled = true): Promise<number> => {
  const result = await h.pool.query<{ id: number }>(
    `INSERT INTO webhook_endpoints (project_id, organization_id, url, event_types, secret, enabled) VALUES ($1, $2, 'https://hooks.example.com/', $3, 'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw', $4) RETURNING id`,
    [projectId, h.ids.organizationId, types, enabled],
  );
  return Number(result.rows[0]?.id);
};

before(async () => {
  h = await startHarness();
  publisher = jetstream(h.nats);
  await h.admin.call('PutTemplate', { projectId: h.ids.projectId, slug: 'welcome', subject: 'Hi', text: 'Hi', active: true });
  subscribed = await endpoint(h.ids.projectId, ['message.sent', 'message.deferred']);
  failedOnly = await endpoint(h.ids.projectId, ['message.failed']);
  await endpoint(h.ids.projectId, ['message.sent', 'message.deferred'], false);
  await endpoint(h.ids.otherProjectId, ['message.sent', 'message.deferred']);
});

after(async () => {
  await h.close();
});

const at = (second: number): string => new Date(Date.UTC(2026, 0, 1, 0, 0, second)).toISOString();
const apply = (events: DeliveryEvent[]) =>
  applyDeliveryEvents(
    h.pool,
    events.map((event) => ({ event })),
  );

interface EventRow {
  id: string;
  type: string;
  sequence: number;
  payload: { type: string; timestamp: string; data: Record<string, unknown> };
  published_at: Date | null;
}
const eventsOf = async (messageId: number): Promise<EventRow[]> =>
  (await h.pool.query<EventRow>('SELECT id, type, sequence, payload, published_at FROM webhook_events WHERE message_id = $1 ORDER BY sequence', [messageId]))
    .rows;
const deliveriesOf = async (eventId: string): Promise<number[]> =>
  (
    await h.pool.query<{ endpoint_id: string }>(`SELECT endpoint_id FROM webhook_deliveries WHERE event_id = $1 AND state = 'pending' ORDER BY endpoint_id`, [
      eventId,
    ])
  ).rows.map((row) => Number(row.endpoint_id));
const relay = () => relayWebhookEvents({ pool: h.pool, publisher, names: h.names, logger: h.logger, connected: () => true });

test('each transition with a type is one webhook event, in the same transaction, with a growing sequence', async () => {
  const messageId = await h.acceptMessage();
  await apply([
    { messageId, state: 'sending', attempt: 1, occurredAt: at(1) },
    { messageId, state: 'deferred', attempt: 1, occurredAt: at(2), smtpCode: 451, smtpResponse: '451 4.7.1 try later', reason: 'greylisted' },
  ]);
  await apply([
    { messageId, state: 'sending', attempt: 2, occurredAt: at(3) },
    { messageId, state: 'sent', attempt: 2, occurredAt: at(4), smtpCode: 250, smtpResponse: '2.0.0 OK' },
  ]);
  const events = await eventsOf(messageId);
  assert.deepEqual(
    events.map(({ type, sequence }) => [type, sequence]),
    [
      ['message.deferred', 1],
      ['message.sent', 2],
    ],
  );
  const celery = (await h.pool.query<{ id: string }>('SELECT celery_task_id AS id FROM messages WHERE id = $1', [messageId])).rows[0]?.id;
  assert.deepEqual(events[1]?.payload, {
    type: 'message.sent',
    timestamp: '2026-01-01T00:00:04.000Z',
    data: {
      message_id: messageId,
      status: 'sent',
      to: 'ada@example.com',
      template: 'welcome',
      attempt: 2,
      smtp_reply: '250 2.0.0 OK',
      reason: null,
      celery_task_id: celery,
      sequence: 2,
      tags: [],
      metadata: {},
    },
  });
  assert.equal(events[0]?.payload.data.reason, 'greylisted');
  // A reply recorded with its code (as nodemailer reports it) names the code once, as the status API does.
  assert.equal(events[0]?.payload.data.smtp_reply, '451 4.7.1 try later');
  // Only the enabled endpoint of this project subscribed to the type gets a delivery.
  for (const event of events) assert.deepEqual(await deliveriesOf(event.id), [subscribed]);
});

test('a duplicate or late event records no second webhook event', async () => {
  const messageId = await h.acceptMessage();
  const sent: DeliveryEvent = { messageId, state: 'sent', attempt: 1, occurredAt: at(5), smtpCode: 250, smtpResponse: '2.0.0 OK' };
  await apply([sent]);
  await apply([sent, { messageId, state: 'failed', attempt: 1, occurredAt: at(6), reason: 'late' }]);
  assert.deepEqual(
    (await eventsOf(messageId)).map(({ type }) => type),
    ['message.sent'],
  );
});

test('a transition nobody subscribed to records nothing', async () => {
  await h.pool.query('UPDATE webhook_endpoints SET enabled = false WHERE id = $1', [failedOnly]);
  const messageId = await h.acceptMessage();
  await apply([{ messageId, state: 'failed', attempt: 1, occurredAt: at(7), smtpCode: 550, smtpResponse: '5.1.1 unknown', reason: 'rejected' }]);
  assert.deepEqual(await eventsOf(messageId), []);
  await h.pool.query('UPDATE webhook_endpoints SET enabled = true WHERE id = $1', [failedOnly]);
});

test('the relay publishes one message per pending delivery, marks the event published, and republishes a replay', async () => {
  const messageId = await h.acceptMessage();
  await apply([{ messageId, state: 'sent', attempt: 1, occurredAt: at(8), smtpCode: 250, smtpResponse: '2.0.0 OK' }]);
  const [event] = await eventsOf(messageId);
  assert.ok(event);
  assert.ok((await relay()) >= 1);
  assert.ok((await eventsOf(messageId))[0]?.published_at);
  const subject = h.names.webhooksSubject(subscribed);
  const stored = await h.jsm.streams.getMessage(h.names.webhooksStream, { last_by_subj: subject });
  assert.ok(stored);
  assert.equal(stored.header.get('Nats-Msg-Id'), `evt_${event.id}:${subscribed}:0`);
  assert.deepEqual(readWebhookDelivery(stored.data, stored.header.get(schemaHeader)), {
    ok: true,
    value: { eventId: Number(event.id), endpointId: subscribed },
  });
  assert.equal(await relay(), 0);

  // A replay (WebhookAdminService) sets the delivery pending and the event unpublished: it goes out again under a new
  // Nats-Msg-Id (its attempts so far), so JetStream does not drop it as the first publish's duplicate.
  await h.pool.query(`UPDATE webhook_deliveries SET state = 'pending', attempts = 1 WHERE event_id = $1`, [event.id]);
  await h.pool.query('UPDATE webhook_events SET published_at = NULL WHERE id = $1', [event.id]);
  const before = (await h.jsm.streams.info(h.names.webhooksStream)).state.messages;
  assert.equal(await relay(), 1);
  assert.equal((await h.jsm.streams.info(h.names.webhooksStream)).state.messages, before + 1);
});

test('webhook events recorded alone or a few together are recorded by statements planned once per connection', async () => {
  const messageIds = [await h.acceptMessage(), await h.acceptMessage(), await h.acceptMessage()];
  const sent = (messageId: number, second: number) => ({ messageId, type: 'message.sent', state: 'sent', attempt: 1, occurredAt: at(second) });
  // One connection, so pg_prepared_statements (per session) sees every execution.
  const session = await h.pool.connect();
  let time = 0;
  const record = async (rounds: number): Promise<void> => {
    for (let round = 0; round < rounds; round += 1, time += 1) {
      assert.equal(await recordMessageWebhookEvents(session, [sent(messageIds[0] as number, time)]), 1);
      // A short batch is padded with events of no message: they record nothing.
      assert.equal(
        await recordMessageWebhookEvents(session, [
          sent(messageIds[1] as number, time),
          sent(messageIds[2] as number, time),
          sent(messageIds[1] as number, time),
        ]),
        3,
      );
    }
  };
  try {
    assert.deepEqual(await plannedAfterWarmUp(session, ['webhook-events-'], record), {
      'webhook-events-record': { generic: 4, custom: 0 },
      'webhook-events-record-one': { generic: 4, custom: 0 },
    });
  } finally {
    session.release();
  }
  // Every event recorded, each once per message in order, and one delivery each, for the one subscribed endpoint.
  assert.deepEqual(
    (await eventsOf(messageIds[1] as number)).map(({ sequence }) => sequence),
    Array.from({ length: 20 }, (_, index) => index + 1),
  );
  const deliveries = await h.pool.query<{ count: number }>(
    'SELECT count(*)::int AS count FROM webhook_deliveries d JOIN webhook_events e ON e.id = d.event_id WHERE e.message_id = ANY ($1::bigint[])',
    [messageIds],
  );
  assert.equal(deliveries.rows[0]?.count, 40);
});

test('the unpublished-age gauge reads the oldest event the relay has still to publish, 0 once all are published', async () => {
  const age = async (): Promise<number> => {
    await updateUnpublishedWebhookAge(h.pool, h.metrics);
    return Number((await h.metrics.webhookUnpublishedAge.get()).values[0]?.value);
  };
  await relay();
  assert.equal(await age(), 0);
  const messageId = await h.acceptMessage();
  await apply([{ messageId, state: 'sent', attempt: 1, occurredAt: at(9), smtpCode: 250, smtpResponse: '2.0.0 OK' }]);
  const [event] = await eventsOf(messageId);
  // Recorded ten minutes ago and still unpublished, as when NATS refused every publish since.
  await h.pool.query("UPDATE webhook_events SET created_at = now() - interval '10 minutes' WHERE id = $1", [event?.id]);
  const stuck = await age();
  assert.ok(stuck >= 600 && stuck < 660, `${stuck} s`);
  assert.ok((await relay()) >= 1);
  assert.equal(await age(), 0);
});
