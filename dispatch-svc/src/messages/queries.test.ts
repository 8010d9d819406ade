import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { status } from '@grpc/grpc-js';
import { GrpcClient } from '@notify/platform';
import { dispatchProto } from '@notify/proto';
import { assertRefused } from '@notify/test/harness/refusal.ts';
import { applyDeliveryEvent } from '../events/event-store.ts';
import { type Harness, startHarness } from '../testing/harness.ts';
import { formatSmtpReply } from './queries.ts';

let h: Harness;
/** ListMessages is notifyctl's (the admin token), not the gateway's. */
let notifyctl: GrpcClient<typeof dispatchProto.DispatchService.service>;
const ids: number[] = [];
/** When every transition below happened (to the millisecond, as the mailers report it). */
const occurredAt = new Date().toISOString();
/** Every lookup names the project and its organization. */
let scope: { projectId: number; organizationId: number };

before(async () => {
  h = await startHarness();
  notifyctl = new GrpcClient(dispatchProto.DispatchService.service, h.address, { token: h.callers.admin.token, deadlineMs: 5_000 });
  scope = { projectId: h.ids.projectId, organizationId: h.ids.organizationId };
  await h.admin.call('PutTemplate', { projectId: h.ids.projectId, slug: 'welcome', subject: 'Hi', text: 'Hi {{ name }}', active: true });
  for (let index = 0; index < 5; index += 1) {
    const response = await h.dispatch.call('Send', {
      projectId: h.ids.projectId,
      organizationId: h.ids.organizationId,
      apiKeyId: h.ids.apiKeyId,
      template: 'welcome',
      to: `user${index}@example.com`,
      dataJson: '{}',
    });
    ids.push(response.messageId);
  }
  const [first, second] = ids;
  if (first === undefined || second === undefined) throw new Error('no messages');
  await applyDeliveryEvent(h.pool, { messageId: first, state: 'sending', attempt: 1, occurredAt });
  await applyDeliveryEvent(h.pool, {
    messageId: first,
    state: 'deferred',
    attempt: 1,
    occurredAt,
    smtpCode: 451,
    smtpResponse: '4.7.1 greylisted',
    reason: 'greylisted',
  });
  await applyDeliveryEvent(h.pool, { messageId: first, state: 'sending', attempt: 2, occurredAt });
  await applyDeliveryEvent(h.pool, { messageId: first, state: 'sent', attempt: 2, occurredAt, smtpCode: 250, smtpResponse: '250 2.0.0 OK' });
  await applyDeliveryEvent(h.pool, { messageId: second, state: 'sending', attempt: 1, occurredAt });
  await applyDeliveryEvent(h.pool, {
    messageId: second,
    state: 'failed',
    attempt: 1,
    occurredAt,
    smtpCode: 550,
    smtpResponse: '5.1.1 unknown user',
    reason: 'recipient rejected',
  });
});

after(async () => {
  notifyctl.close();
  await h.close();
});

test('a message is returned with its transitions in lifecycle order', async () => {
  const message = await h.dispatch.call('GetMessage', { ...scope, messageId: ids[0] });
  assert.equal(message.state, 'sent');
  assert.equal(message.template, 'welcome');
  assert.equal(message.templateVersion, 1);
  assert.equal(message.to, 'user0@example.com');
  assert.equal(message.attempts, 2);
  assert.equal(message.lastSmtpReply, '250 2.0.0 OK');
  assert.equal(message.failureReason, '');
  assert.equal(message.idempotencyKey, '');
  assert.deepEqual(
    message.events.map((event) => `${event.state}:${event.attempt}:${event.smtpCode}`),
    ['queued:0:0', 'sending:1:0', 'deferred:1:451', 'sending:2:0', 'sent:2:250'],
  );
  assert.equal(message.events[2]?.reason, 'greylisted');
  // Each transition as its event gave it: the time to the millisecond in UTC, and '' for what it did not carry.
  assert.deepEqual(message.events[4], { state: 'sent', attempt: 2, smtpCode: 250, smtpResponse: '250 2.0.0 OK', reason: '', occurredAt });
});

test('a failed message shows why', async () => {
  const message = await h.dispatch.call('GetMessage', { ...scope, messageId: ids[1] });
  assert.equal(message.state, 'failed');
  assert.equal(message.failureReason, 'recipient rejected');
  assert.equal(message.lastSmtpReply, '550 5.1.1 unknown user');
});

test('a message of another project or organization is not found, exactly like one that does not exist', async () => {
  await assertRefused(h.dispatch.call('GetMessage', { ...scope, projectId: h.ids.otherProjectId, messageId: ids[0] }), status.NOT_FOUND, 'message_not_found');
  await assertRefused(
    h.dispatch.call('GetMessage', { ...scope, organizationId: h.ids.organizationId + 1_000, messageId: ids[0] }),
    status.NOT_FOUND,
    'message_not_found',
  );
  await assertRefused(h.dispatch.call('GetMessage', { projectId: h.ids.projectId, messageId: ids[0] }), status.NOT_FOUND, 'message_not_found');
  await assertRefused(h.dispatch.call('GetMessage', { ...scope, messageId: 999_999 }), status.NOT_FOUND, 'message_not_found');
});

test('messages are listed newest first, a page at a time', async () => {
  const newestFirst = [...ids].reverse();
  const first = await notifyctl.call('ListMessages', { projectId: h.ids.projectId, limit: 2 });
  assert.deepEqual(
    first.messages.map((message) => message.id),
    newestFirst.slice(0, 2),
  );
  assert.equal(first.nextBeforeId, newestFirst[1]);
  const second = await notifyctl.call('ListMessages', { projectId: h.ids.projectId, limit: 2, beforeId: first.nextBeforeId });
  assert.deepEqual(
    second.messages.map((message) => message.id),
    newestFirst.slice(2, 4),
  );
  const last = await notifyctl.call('ListMessages', { projectId: h.ids.projectId, limit: 2, beforeId: second.nextBeforeId });
  assert.deepEqual(
    last.messages.map((message) => message.id),
    newestFirst.slice(4),
  );
  assert.equal(last.nextBeforeId, 0, 'no cursor after the last page');
});

test('without a limit the default page holds every one of a few messages', async () => {
  const all = await notifyctl.call('ListMessages', { projectId: h.ids.projectId });
  assert.equal(all.messages.length, 5);
  assert.equal(all.nextBeforeId, 0);
  assert.deepEqual(all.messages[0]?.events, [], 'listings leave events out');
});

test('messages can be listed by state', async () => {
  const queued = await notifyctl.call('ListMessages', { projectId: h.ids.projectId, state: 'queued' });
  assert.deepEqual(
    queued.messages.map((message) => message.id),
    [...ids].reverse().slice(0, 3),
  );
  const failed = await notifyctl.call('ListMessages', { projectId: h.ids.projectId, state: 'failed' });
  assert.deepEqual(
    failed.messages.map((message) => message.id),
    [ids[1]],
  );
  const other = await notifyctl.call('ListMessages', { projectId: h.ids.otherProjectId });
  assert.deepEqual(other.messages, []);
});

test('a page goes on from the place of the message it names, in acceptance order as the status API lists, whatever the ids', async () => {
  // Ids in one order, acceptance times in another: a transaction that began first may take its id last.
  const { rows } = await h.pool.query<{ id: number }>(
    `INSERT INTO messages (project_id, organization_id, api_key_id, template_id, template_slug, template_version, recipient, data, celery_task_id, created_at)
     SELECT $1, $2, $3, t.id, 'welcome', 1, 'late' || minutes || '@example.com', '{}', gen_random_uuid(), now() - minutes * interval '1 minute'
       FROM unnest(ARRAY[1, 3, 2]) WITH ORDINALITY AS a (minutes, position), templates t
      WHERE t.project_id = $4 AND t.slug = 'welcome'
      ORDER BY position RETURNING id`,
    [h.ids.otherProjectId, h.ids.organizationId, h.ids.apiKeyId, h.ids.projectId],
  );
  const [oneMinute, threeMinutes, twoMinutes] = rows.map((row) => row.id);
  const pages: number[][] = [];
  let beforeId = 0;
  do {
    const page = await notifyctl.call('ListMessages', { projectId: h.ids.otherProjectId, limit: 1, beforeId });
    pages.push(page.messages.map((message) => message.id));
    beforeId = page.nextBeforeId;
  } while (beforeId > 0);
  assert.deepEqual(pages, [[oneMinute], [twoMinutes], [threeMinutes]]);
});

test("a cursor names a place among all messages: another project's message, or an id no message has (`--before N+1 --limit 1` is message N)", async () => {
  const listed = async (beforeId: number, limit = 50): Promise<number[]> =>
    (await notifyctl.call('ListMessages', { projectId: h.ids.projectId, beforeId, limit })).messages.map((message) => message.id);
  const send = async (): Promise<number> => (await h.dispatch.call('Send', h.sendRequest({ to: 'cursor@example.com' }))).messageId;
  const below = await send();
  // Ids no message will have, between two of the project's messages.
  await h.pool.query("SELECT setval('messages_id_seq', nextval('messages_id_seq') + 10)");
  const above = await send();
  assert.deepEqual(await listed(above + 1, 1), [above]);
  assert.deepEqual(await listed(above - 5), await listed(above));
  assert.equal((await listed(above - 5, 1))[0], below);
  // Another project's message, accepted after every message of this one: its place is before all of them.
  const { rows } = await h.pool.query<{ id: string }>(
    `INSERT INTO messages (project_id, organization_id, api_key_id, template_id, template_slug, template_version, recipient, data, celery_task_id)
     SELECT $1, $2, $3, t.id, 'welcome', 1, 'other@example.com', '{}', gen_random_uuid() FROM templates t WHERE t.project_id = $4 AND t.slug = 'welcome'
     RETURNING id`,
    [h.ids.otherProjectId, h.ids.organizationId, h.ids.apiKeyId, h.ids.projectId],
  );
  assert.deepEqual(await listed(Number(rows[0]?.id)), await listed(0));
});

test('the gateway token may not list messages: the gateway searches them instead', async () => {
  await assertRefused(h.dispatch.call('ListMessages', { projectId: h.ids.projectId }), status.PERMISSION_DENIED, 'permission_denied');
});

test('an unknown state filter is INVALID_ARGUMENT', async () => {
  await assertRefused(notifyctl.call('ListMessages', { projectId: h.ids.projectId, state: 'delivered' }), status.INVALID_ARGUMENT, 'invalid_argument');
});

test('an SMTP reply reads code first, once', () => {
  assert.equal(formatSmtpReply(250, '250 2.0.0 OK'), '250 2.0.0 OK');
  assert.equal(formatSmtpReply(550, '5.1.1 unknown user'), '550 5.1.1 unknown user');
  assert.equal(formatSmtpReply(421, null), '421');
  assert.equal(formatSmtpReply(null, null), '');
});
