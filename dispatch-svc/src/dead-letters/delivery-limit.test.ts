// JetStream's delivery limit against a real server: a job offered max_deliver times without being settled ends its
// message `failed` with the reason, and leaves the jobs stream.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { type DurableConsumer, ensureConsumer, nanoseconds } from '@notify/platform/nats';
import { waitFor } from '@notify/test/harness/wait.ts';
import { type Harness, startHarness } from '../testing/harness.ts';
import { ensureDeliveryLimitStream, startDeliveryLimitConsumer } from './delivery-limit.ts';

let h: Harness;
let consumer: DurableConsumer;
/** The delivery limit of the stand-in mailers' consumer. */
const maxDeliver = 2;

before(async () => {
  h = await startHarness();
  await h.admin.call('PutTemplate', { projectId: h.ids.projectId, slug: 'welcome', subject: 'Hi', text: 'Hi', active: true });
  await ensureDeliveryLimitStream(h.jsm, h.names, 1);
  await ensureConsumer(h.jsm, h.names.jobsStream, {
    durable_name: h.names.mailerConsumer,
    filter_subject: h.names.jobsSubject,
    max_deliver: maxDeliver,
    ack_wait: nanoseconds(30_000),
  });
  consumer = startDeliveryLimitConsumer({ js: h.js, jsm: h.jsm, pool: h.pool, names: h.names, metrics: h.metrics, logger: h.logger });
});

after(async () => {
  await consumer?.stop();
  await h?.jsm.streams.delete(h.names.deliveryLimitsStream).catch(() => false);
  await h?.close();
});

/** Takes the next job and gives it back at once, as a replica that crashes or cannot record events would. */
async function takeWithoutSettling(): Promise<number | undefined> {
  const jobs = await h.js.consumers.get(h.names.jobsStream, h.names.mailerConsumer);
  const message = await jobs.next({ expires: 1_000 });
  message?.nak();
  return message?.info.deliveryCount;
}

test('a job offered up to the delivery limit without an outcome ends its message failed, and leaves the stream', async () => {
  const { messageId } = await h.dispatch.call('Send', {
    projectId: h.ids.projectId,
    organizationId: h.ids.organizationId,
    apiKeyId: h.ids.apiKeyId,
    template: 'welcome',
    to: 'a@example.com',
    dataJson: '{}',
  });
  assert.deepEqual([await takeWithoutSettling(), await takeWithoutSettling()], [1, 2]);
  assert.equal(await takeWithoutSettling(), undefined, 'the server offers it no more');

  await waitFor(async () => (await h.pool.query(`SELECT 1 FROM messages WHERE id = $1 AND state = 'failed'`, [messageId])).rowCount === 1, {
    timeoutMs: 5_000,
    intervalMs: 25,
    what: 'the message to fail',
  });
  const message = await h.dispatch.call('GetMessage', { projectId: h.ids.projectId, organizationId: h.ids.organizationId, messageId });
  assert.equal(message.failureReason, 'delivery limit reached: offered 2 times without an outcome');
  assert.equal(message.attempts, maxDeliver);
  assert.deepEqual(
    message.events.map((event) => `${event.state}:${event.attempt}`),
    ['queued:0', `failed:${maxDeliver}`],
  );

  await waitFor(async () => (await h.jobsInStream()) === 0, { timeoutMs: 5_000, intervalMs: 25, what: 'the job to be deleted' });
  await waitFor(async () => (await h.jsm.consumers.info(h.names.deliveryLimitsStream, h.names.deliveryLimitsConsumer)).num_ack_pending === 0, {
    timeoutMs: 5_000,
    intervalMs: 25,
    what: 'the advisory to be acknowledged',
  });
  assert.match(await h.registry.getSingleMetricAsString('notify_delivery_limit_advisories_total'), /outcome="failed"[^}]*\} 1(\n|$)/);
});
