// A send's tags and metadata against a real PostgreSQL: stored with the message, read back by GetMessage and the
// listings, filtered on by tag, and carried in every webhook event of the message (delivery, report, unsubscribe).
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { status } from '@grpc/grpc-js';
import { GrpcClient } from '@notify/platform';
import { type dispatch, dispatchProto } from '@notify/proto';
import { assertRefused } from '@notify/test/harness/refusal.ts';
import { applyDeliveryEvents } from '../events/event-store.ts';
import { applyRecipientReport, applyUnsubscribe } from '../reports/report-store.ts';
import { type Harness, startHarness } from '../testing/harness.ts';

let h: Harness;
let panel: GrpcClient<typeof dispatchProto.PanelService.service>;

before(async () => {
  h = await startHarness();
  panel = new GrpcClient(dispatchProto.PanelService.service, h.address, { token: h.callers.gateway.token, deadlineMs: 10_000 });
  await h.admin.call('PutTemplate', { projectId: h.ids.projectId, slug: 'welcome', subject: 'Hi', text: 'Hi', active: true });
  await h.admin.call('PutTemplate', { projectId: h.ids.otherProjectId, slug: 'welcome', subject: 'Hi', text: 'Hi', active: true });
  const types = ['message.sent', 'message.bounced', 'message.unsubscribed'];
  await h.pool.query(
    `INSERT INTO webhook_endpoints (project_id, organization_id, url, event_types, secret) VALUES ($1, $2, 'https://hooks.example.com/', $3, 'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw')`,
    [h.ids.projectId, h.ids.organizationId, types],
  );
});

after(async () => {
  panel?.close();
  await h.close();
});

const send = (labels: Partial<dispatch.SendRequest>, projectId = h.ids.projectId) =>
  h.dispatch.call('Send', {
    projectId,
    organizationId: h.ids.organizationId,
    apiKeyId: h.ids.apiKeyId,
    template: 'welcome',
    to: 'ada@example.com',
    dataJson: '{}',
    ...labels,
  });
const get = (messageId: number) => h.dispatch.call('GetMessage', { projectId: h.ids.projectId, organizationId: h.ids.organizationId, messageId });
const listTagged = async (tag: string, projectId = h.ids.projectId) =>
  (await h.dispatch.call('SearchProjectMessages', { projectId, organizationId: h.ids.organizationId, tag })).messages.map((message) => message.id);
const messageCount = async () => (await h.pool.query<{ n: number }>('SELECT count(*)::int AS n FROM messages')).rows[0]?.n;

test('tags and metadata are stored with the message and read back as sent; none reads [] and {}', async () => {
  const metadata = { order_id: 'A-1', customer: 'Ada Lovelace' };
  const labelled = await send({ tags: ['welcome', 'spring-2026'], metadataJson: JSON.stringify(metadata) });
  const message = await get(labelled.messageId);
  assert.deepEqual([message.tags, message.metadata], [['welcome', 'spring-2026'], metadata]);
  const plain = await get((await send({})).messageId);
  assert.deepEqual([plain.tags, plain.metadata], [[], {}]);
});

test('?tag= lists exactly the messages sent with that tag, newest first, in this project only', async () => {
  const first = (await send({ tags: ['news', 'b'] })).messageId;
  const second = (await send({ tags: ['a', 'news'] })).messageId;
  await send({ tags: ['News'] });
  await send({ tags: ['news'] }, h.ids.otherProjectId);
  assert.deepEqual(await listTagged('news'), [second, first]);
  assert.deepEqual(await listTagged('new'), [], 'exact match, not a prefix');
  assert.equal((await listTagged('news', h.ids.otherProjectId)).length, 1);
  const page = await h.dispatch.call('SearchProjectMessages', { projectId: h.ids.projectId, organizationId: h.ids.organizationId, tag: 'news', limit: 1 });
  const next = await h.dispatch.call('SearchProjectMessages', {
    projectId: h.ids.projectId,
    organizationId: h.ids.organizationId,
    tag: 'news',
    limit: 1,
    cursor: page.nextCursor,
  });
  assert.deepEqual([page.messages[0]?.id, next.messages[0]?.id, next.nextCursor], [second, first, '']);
  const searched = await panel.call('SearchMessages', { projectId: h.ids.projectId, organizationId: h.ids.organizationId, tag: 'news' });
  assert.deepEqual(
    searched.messages.map((message) => message.id),
    [second, first],
    'the panel search reads the same page',
  );
});

test('a malformed tag filter is INVALID_ARGUMENT, in the listing and the panel search', async () => {
  const error = await assertRefused(
    h.dispatch.call('SearchProjectMessages', { projectId: h.ids.projectId, organizationId: h.ids.organizationId, tag: "x' OR 1=1" }),
    status.INVALID_ARGUMENT,
    'invalid_argument',
  );
  assert.deepEqual(
    error.fields.map((fault) => fault.split(':')[0]),
    ['tag'],
  );
  await assertRefused(
    panel.call('SearchMessages', { projectId: h.ids.projectId, organizationId: h.ids.organizationId, tag: 'x'.repeat(65) }),
    status.INVALID_ARGUMENT,
    'invalid_argument',
  );
});

test('labels that skipped the gateway are INVALID_ARGUMENT and write nothing', async () => {
  const before = await messageCount();
  for (const labels of [
    { tags: ['a', 'a'] },
    { tags: ['a b'] },
    { tags: Array.from({ length: 11 }, (_, index) => `t${index}`) },
    { metadataJson: '[]' },
    { metadataJson: '{"a": 1}' },
    { metadataJson: '{"__proto__": "x"}' },
    { metadataJson: JSON.stringify({ a: 'nul\u0000' }) },
    { metadataJson: JSON.stringify({ a: 'x'.repeat(257) }) },
    { metadataJson: 'not json' },
  ]) {
    const error = await assertRefused(send(labels), status.INVALID_ARGUMENT, 'invalid_argument');
    assert.match(error.fields.join(), /^(tags|metadata_json):/, JSON.stringify(labels));
  }
  assert.equal(await messageCount(), before);
});

test('every webhook event of a message carries its tags and metadata: delivery, bounce and unsubscribe', async () => {
  const metadata = { order_id: 'A-2' };
  const messageId = (await send({ tags: ['receipt'], metadataJson: JSON.stringify(metadata) })).messageId;
  const at = new Date().toISOString();
  await applyDeliveryEvents(h.pool, [
    { event: { messageId, state: 'sending', attempt: 1, occurredAt: at } },
    { event: { messageId, state: 'sent', attempt: 1, occurredAt: at, smtpCode: 250, smtpResponse: 'OK' } },
  ]);
  await applyRecipientReport(h.pool, h.deps.dataKey, {
    messageId,
    kind: 'bounced',
    suppression: undefined,
    detail: 'mailbox full',
    smtpCode: 552,
    receivedAt: at,
  });
  await applyUnsubscribe(h.pool, h.deps.dataKey, { projectId: h.ids.projectId, messageId, address: 'ada@example.com', source: 'one_click' });
  const { rows } = await h.pool.query<{ type: string; payload: { data: Record<string, unknown> } }>(
    'SELECT type, payload FROM webhook_events WHERE message_id = $1 ORDER BY sequence',
    [messageId],
  );
  assert.deepEqual(
    rows.map((row) => row.type),
    ['message.sent', 'message.bounced', 'message.unsubscribed'],
  );
  for (const row of rows) assert.deepEqual([row.payload.data.tags, row.payload.data.metadata], [['receipt'], metadata], row.type);
});
