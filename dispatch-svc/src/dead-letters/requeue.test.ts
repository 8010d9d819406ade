// Dead letters against real PostgreSQL and JetStream: listing failed messages, re-queueing them as a new delivery
// whose job JetStream does not take for the first one, and late events of the first delivery changing nothing.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { status } from '@grpc/grpc-js';
import { GrpcClient } from '@notify/platform';
import { type DeliveryEvent, dispatchProto } from '@notify/proto';
import { assertRefused } from '@notify/test/harness/refusal.ts';
import { applyDeliveryEvent } from '../events/event-store.ts';
import { addSuppression, erasedAddress } from '../suppressions/suppression-store.ts';
import { type Harness, startHarness } from '../testing/harness.ts';

let h: Harness;
let deadLetters: GrpcClient<typeof dispatchProto.DeadLetterAdminService.service>;

before(async () => {
  h = await startHarness();
  await h.admin.call('PutTemplate', { projectId: h.ids.projectId, slug: 'welcome', subject: 'Hi', text: 'Hi v1', active: true });
  deadLetters = new GrpcClient(dispatchProto.DeadLetterAdminService.service, h.address, { token: h.callers.admin.token, deadlineMs: 5_000 });
});

after(async () => {
  deadLetters?.close();
  await h?.close();
});

const newMessage = (): Promise<number> => h.acceptMessage({ dataJson: '{"name":"Ada"}' });

const apply = (messageId: number, state: DeliveryEvent['state'], attempt: number, extra: Partial<DeliveryEvent> = {}) =>
  applyDeliveryEvent(h.pool, { messageId, state, attempt, occurredAt: new Date().toISOString(), ...extra });

/** A message that failed at attempt 2 after a deferral, as a relay outage past the retries would leave it. */
async function failedMessage(): Promise<number> {
  const id = await newMessage();
  await apply(id, 'sending', 1);
  await apply(id, 'deferred', 1, { smtpCode: 451, smtpResponse: '451 4.3.0 try later', reason: 'recipient refused by the mail server: 451 4.3.0 try later' });
  await apply(id, 'sending', 2);
  await apply(id, 'failed', 2, { smtpCode: 451, smtpResponse: '451 4.3.0 try later', reason: 'retries exhausted: recipient refused' });
  return id;
}

const row = async (id: number) =>
  (await h.pool.query('SELECT state, state_attempt, attempts, failure_reason, last_smtp_code, template_version FROM messages WHERE id = $1', [id])).rows[0];

const lastJob = () => h.lastJob();

describe('listing dead letters', () => {
  test('lists only the failed messages of the project, with reason, attempts and last SMTP reply', async () => {
    const failed = await failedMessage();
    const queued = await newMessage();
    const listed = await deadLetters.call('ListDeadLetters', { projectId: h.ids.projectId });
    const ids = listed.messages.map((message) => message.id);
    assert.ok(ids.includes(failed));
    assert.ok(!ids.includes(queued));
    const entry = listed.messages.find((message) => message.id === failed);
    assert.equal(entry?.state, 'failed');
    assert.equal(entry?.attempts, 2);
    assert.equal(entry?.failureReason, 'retries exhausted: recipient refused');
    assert.equal(entry?.lastSmtpReply, '451 4.3.0 try later');
    assert.deepEqual((await deadLetters.call('ListDeadLetters', { projectId: h.ids.otherProjectId })).messages, []);
  });

  test('refuses a request it cannot read', async () => {
    await assertRefused(deadLetters.call('ListDeadLetters', { projectId: 0 }), status.INVALID_ARGUMENT, 'invalid_argument');
    await assertRefused(deadLetters.call('ListDeadLetters', { projectId: h.ids.projectId, limit: 501 }), status.INVALID_ARGUMENT, 'invalid_argument');
  });
});

describe('re-queueing dead letters', () => {
  test('a failed message goes back to queued with an event, and a new job numbered after its earlier attempts is published', async () => {
    const id = await failedMessage();
    // The operator fixed the template: the new delivery renders the current version.
    await h.admin.call('PutTemplate', { projectId: h.ids.projectId, slug: 'welcome', subject: 'Hi', text: 'Hi v2', active: true });
    const jobs = (await h.jsm.streams.info(h.names.jobsStream)).state.last_seq;
    const response = await deadLetters.call('RequeueDeadLetters', { projectId: h.ids.projectId, messageIds: [id] });
    assert.deepEqual(response, { requeued: [id], skipped: [] });

    assert.deepEqual(await row(id), { state: 'queued', state_attempt: 2, attempts: 2, failure_reason: null, last_smtp_code: 451, template_version: 2 });
    const message = await h.dispatch.call('GetMessage', { projectId: h.ids.projectId, organizationId: h.ids.organizationId, messageId: id });
    assert.deepEqual(
      message.events.map((event) => `${event.state}:${event.attempt}`),
      ['queued:0', 'sending:1', 'deferred:1', 'sending:2', 'failed:2', 'queued:3'],
    );
    assert.match(message.events.at(-1)?.reason ?? '', /^re-queued by an operator \(template version 2\)$/);

    assert.equal((await h.jsm.streams.info(h.names.jobsStream)).state.last_seq, jobs + 1, 'one new job');
    const { msgId, job } = await lastJob();
    assert.equal(msgId, `${job.celeryTaskId}:requeue:2`);
    assert.equal(job.messageId, id);
    assert.equal(job.requeue?.attemptBase, 2);
    assert.equal(job.template.text, 'Hi v2');
    assert.deepEqual(job.data, { name: 'Ada' });
    assert.equal((await h.pool.query('SELECT 1 FROM outbox WHERE message_id = $1', [id])).rowCount, 0, 'the outbox row is gone once published');
  });

  test('late and repeated events of the first delivery leave a re-queued message queued; the new delivery moves it', async () => {
    const id = await failedMessage();
    await deadLetters.call('RequeueDeadLetters', { projectId: h.ids.projectId, messageIds: [id] });
    assert.equal(await apply(id, 'failed', 2, { reason: 'late copy' }), 'duplicate');
    assert.equal(await apply(id, 'sending', 2), 'duplicate');
    assert.equal(await apply(id, 'sent', 2), 'recorded', 'an event of the first delivery never seen before is recorded, not applied');
    assert.equal((await row(id))?.state, 'queued');
    assert.equal(await apply(id, 'sending', 3), 'applied');
    assert.equal(await apply(id, 'sent', 3, { smtpCode: 250, smtpResponse: '250 OK' }), 'applied');
    assert.deepEqual(await row(id), { state: 'sent', state_attempt: 3, attempts: 3, failure_reason: null, last_smtp_code: 250, template_version: 2 });
  });

  test('a message re-queued a second time gets another Nats-Msg-Id, so JetStream keeps the new job', async () => {
    const id = await failedMessage();
    await deadLetters.call('RequeueDeadLetters', { projectId: h.ids.projectId, messageIds: [id] });
    await apply(id, 'sending', 3);
    await apply(id, 'failed', 3, { smtpCode: 550, smtpResponse: '550 no such user', reason: 'recipient refused' });
    const jobs = (await h.jsm.streams.info(h.names.jobsStream)).state.last_seq;
    assert.deepEqual((await deadLetters.call('RequeueDeadLetters', { projectId: h.ids.projectId, messageIds: [id] })).requeued, [id]);
    assert.equal((await h.jsm.streams.info(h.names.jobsStream)).state.last_seq, jobs + 1);
    const last = await lastJob();
    assert.equal(last.msgId, `${last.job.celeryTaskId}:requeue:3`, 'numbered after attempt 3 of the second delivery');
  });

  test('messages that are not failed messages of the project are reported and left alone', async () => {
    const queued = await newMessage();
    const sent = await newMessage();
    await apply(sent, 'sent', 1, { smtpCode: 250, smtpResponse: '250 OK' });
    const response = await deadLetters.call('RequeueDeadLetters', { projectId: h.ids.projectId, messageIds: [queued, sent, 999_999] });
    assert.deepEqual(response, {
      requeued: [],
      skipped: [
        { messageId: queued, reason: 'not_failed' },
        { messageId: sent, reason: 'not_failed' },
        { messageId: 999_999, reason: 'message_not_found' },
      ],
    });
    const failed = await failedMessage();
    assert.deepEqual((await deadLetters.call('RequeueDeadLetters', { projectId: h.ids.otherProjectId, messageIds: [failed] })).skipped, [
      { messageId: failed, reason: 'message_not_found' },
    ]);
    assert.equal((await row(failed))?.state, 'failed');
  });

  test('a failed message whose template is inactive stays failed', async () => {
    await h.admin.call('PutTemplate', { projectId: h.ids.projectId, slug: 'paused', subject: 'Hi', text: 'Hi', active: true });
    const response = await h.dispatch.call('Send', {
      projectId: h.ids.projectId,
      organizationId: h.ids.organizationId,
      apiKeyId: h.ids.apiKeyId,
      template: 'paused',
      to: 'b@example.com',
      dataJson: '{}',
    });
    await apply(response.messageId, 'failed', 1, { reason: 'recipient refused' });
    await h.admin.call('SetTemplateActive', { projectId: h.ids.projectId, slug: 'paused', active: false });
    const result = await deadLetters.call('RequeueDeadLetters', { projectId: h.ids.projectId, messageIds: [response.messageId] });
    assert.deepEqual(result.skipped, [{ messageId: response.messageId, reason: 'template_inactive' }]);
  });

  test("a failed message whose recipient was suppressed since, in clear or as an erasure's hash, stays failed; the others are re-queued", async () => {
    const failedTo = async (to: string): Promise<number> => {
      const { messageId } = await h.dispatch.call('Send', h.sendRequest({ to, dataJson: '{"name":"Ada"}' }));
      await apply(messageId, 'sending', 1);
      await apply(messageId, 'failed', 1, { smtpCode: 451, smtpResponse: '451 4.3.0 try later', reason: 'retries exhausted: recipient refused' });
      return messageId;
    };
    const [bounced, erased, fine] = [await failedTo('Gone@Example.com'), await failedTo('forgotten@example.com'), await failedTo('fine@example.com')];
    // The domain is compared case-insensitively, as the send path does.
    await addSuppression(h.pool, h.deps.dataKey, { projectId: h.ids.projectId, address: 'Gone@example.COM', reason: 'hard_bounce' });
    await addSuppression(h.pool, h.deps.dataKey, {
      projectId: h.ids.projectId,
      address: erasedAddress(h.deps.dataKey, h.ids.projectId, 'forgotten@example.com'),
      reason: 'complaint',
    });
    const named = await deadLetters.call('RequeueDeadLetters', { projectId: h.ids.projectId, messageIds: [bounced, erased, fine] });
    assert.deepEqual(named.requeued, [fine]);
    assert.deepEqual(named.skipped, [
      { messageId: bounced, reason: 'recipient_suppressed' },
      { messageId: erased, reason: 'recipient_suppressed' },
    ]);
    const all = await deadLetters.call('RequeueDeadLetters', { projectId: h.ids.projectId, all: true });
    assert.ok(!all.requeued.includes(bounced) && !all.requeued.includes(erased));
    assert.ok(all.skipped.some((skip) => skip.messageId === bounced && skip.reason === 'recipient_suppressed'));
    for (const id of [bounced, erased]) assert.equal((await row(id))?.state, 'failed');
  });

  test('--all re-queues every failed message of the project', async () => {
    const ids = [await failedMessage(), await failedMessage()];
    const response = await deadLetters.call('RequeueDeadLetters', { projectId: h.ids.projectId, all: true });
    for (const id of ids) assert.ok(response.requeued.includes(id), `message ${id} re-queued`);
    // Left failed with an active template: only messages to suppressed recipients (the test above), each skipped so.
    const { rows } = await h.pool.query<{ id: number }>(
      `SELECT m.id::int AS id FROM messages m JOIN templates t ON t.id = m.template_id WHERE m.state = 'failed' AND t.active ORDER BY m.id`,
    );
    const suppressed = response.skipped.filter((skip) => skip.reason === 'recipient_suppressed').map((skip) => skip.messageId);
    assert.deepEqual(
      rows.map((row) => row.id),
      suppressed.sort((x, y) => x - y),
    );
  });

  test('refuses a request naming neither or both of message ids and all', async () => {
    await assertRefused(deadLetters.call('RequeueDeadLetters', { projectId: h.ids.projectId }), status.INVALID_ARGUMENT, 'invalid_argument');
    await assertRefused(
      deadLetters.call('RequeueDeadLetters', { projectId: h.ids.projectId, messageIds: [1], all: true }),
      status.INVALID_ARGUMENT,
      'invalid_argument',
    );
    await assertRefused(deadLetters.call('RequeueDeadLetters', { projectId: h.ids.projectId, messageIds: [0] }), status.INVALID_ARGUMENT, 'invalid_argument');
  });

  test('the gateway token cannot re-queue', async () => {
    const gateway = new GrpcClient(dispatchProto.DeadLetterAdminService.service, h.address, { token: h.callers.gateway.token, deadlineMs: 5_000 });
    try {
      await assert.rejects(
        gateway.call('ListDeadLetters', { projectId: h.ids.projectId }),
        (error: { status?: number }) => error.status === status.PERMISSION_DENIED,
      );
    } finally {
      gateway.close();
    }
  });
});
