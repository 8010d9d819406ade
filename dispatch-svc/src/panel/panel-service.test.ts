// PanelService over real gRPC on a run-unique database: the panel's message search, message page, overview,
// template preview and re-queue.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { status } from '@grpc/grpc-js';
import { GrpcClient } from '@notify/platform';
import { dispatchProto } from '@notify/proto';
import { assertRefused } from '@notify/test/harness/refusal.ts';
import { applyDeliveryEvent } from '../events/event-store.ts';
import { decodeCursor, encodeCursor } from '../messages/message-list.ts';
import { type Harness, startHarness } from '../testing/harness.ts';

let h: Harness;
let panel: GrpcClient<typeof dispatchProto.PanelService.service>;
let scope: { projectId: number; organizationId: number };

async function send(template: string, to: string, data: Record<string, unknown> = { name: 'Ana' }): Promise<number> {
  const response = await h.dispatch.call('Send', {
    projectId: h.ids.projectId,
    organizationId: h.ids.organizationId,
    apiKeyId: h.ids.apiKeyId,
    template,
    to,
    dataJson: JSON.stringify(data),
  });
  return response.messageId;
}

async function deliver(messageId: number, ...steps: Array<'sending' | 'deferred' | 'sent' | 'failed'>): Promise<void> {
  let attempt = 1;
  for (const state of steps) {
    const reply =
      state === 'sent' ? { smtpCode: 250, smtpResponse: '250 2.0.0 OK' } : state === 'sending' ? {} : { smtpCode: 451, smtpResponse: '4.7.1 try later' };
    await applyDeliveryEvent(h.pool, {
      messageId,
      state,
      attempt,
      occurredAt: new Date().toISOString(),
      ...reply,
      ...(state === 'failed' ? { reason: 'recipient rejected', smtpCode: 550 } : {}),
    });
    if (state === 'deferred') attempt += 1;
  }
}

before(async () => {
  h = await startHarness();
  panel = new GrpcClient(dispatchProto.PanelService.service, h.address, { token: h.callers.gateway.token, deadlineMs: 10_000 });
  scope = { projectId: h.ids.projectId, organizationId: h.ids.organizationId };
  const schema = JSON.stringify({ type: 'object', required: ['name'], properties: { name: { type: 'string' }, plan: { enum: ['gold', 'silver'] } } });
  await h.admin.call('PutTemplate', {
    ...scope,
    slug: 'welcome',
    subject: 'Hello {{ name }}',
    html: '<p>Hi {{ name }}</p>',
    text: 'Hi {{ name }}',
    variablesSchemaJson: schema,
    active: true,
  });
  await h.admin.call('PutTemplate', { ...scope, slug: 'invoice', subject: 'Invoice for {{ name }}', text: 'Pay', active: true });
});

after(async () => {
  panel?.close();
  await h?.close();
});

test('messages are searched newest first a page at a time, by state, template, recipient and time', async () => {
  const ids = [
    await send('welcome', 'ana@example.com'),
    await send('invoice', 'Bob@Example.com'),
    await send('welcome', 'bob@example.com'),
    await send('invoice', 'cy@example.com'),
  ];
  const [first, second, third, fourth] = ids as [number, number, number, number];
  await deliver(first, 'sending', 'sent');
  await deliver(fourth, 'sending', 'failed');
  // Accepted a day ago: outside a time range that starts an hour back.
  await h.pool.query(`UPDATE messages SET created_at = now() - interval '1 day' WHERE id = $1`, [first]);

  const search = (filters: Record<string, unknown>) => panel.call('SearchMessages', { ...scope, ...filters });
  const idsOf = async (filters: Record<string, unknown>) => (await search(filters)).messages.map((message) => message.id);

  const page1 = await search({ limit: 3 });
  assert.deepEqual(
    page1.messages.map((message) => message.id),
    [fourth, third, second],
  );
  assert.equal(decodeCursor(page1.nextCursor)?.id, second, 'the cursor is the last row shown, opaque');
  const page2 = await search({ limit: 3, cursor: page1.nextCursor });
  assert.deepEqual(
    page2.messages.map((message) => message.id).filter((id) => ids.includes(id)),
    [first],
  );
  assert.equal(page2.nextCursor, '');

  assert.deepEqual(await idsOf({ state: 'failed' }), [fourth]);
  assert.deepEqual(await idsOf({ template: 'invoice' }), [fourth, second]);
  assert.deepEqual(await idsOf({ recipient: ' BOB@example.COM ' }), [third, second]);
  const hourAgo = new Date(Date.now() - 3_600_000).toISOString();
  assert.deepEqual(
    (await idsOf({ createdFrom: hourAgo })).filter((id) => ids.includes(id)),
    [fourth, third, second],
  );
  assert.deepEqual(
    (await idsOf({ createdUntil: hourAgo })).filter((id) => ids.includes(id)),
    [first],
  );
  assert.deepEqual(await idsOf({ template: 'welcome', state: 'sent' }), [first]);

  const row = page1.messages[0];
  assert.equal(row?.to, 'cy@example.com');
  assert.equal(row?.state, 'failed');
  assert.equal(row?.template, 'invoice');
  assert.ok(Date.parse(row?.updatedAt ?? '') >= Date.parse(row?.createdAt ?? ''));
});

test("another organization's messages are never found, even in a project id it names", async () => {
  const id = await send('welcome', 'private@example.com');
  const foreign = { projectId: h.ids.projectId, organizationId: h.ids.organizationId + 1000 };
  assert.deepEqual((await panel.call('SearchMessages', foreign)).messages, []);
  await assertRefused(panel.call('GetMessageView', { ...foreign, messageId: id }), status.NOT_FOUND, 'message_not_found');
  await assertRefused(
    panel.call('GetMessageView', { projectId: h.ids.otherProjectId, organizationId: h.ids.organizationId, messageId: id }),
    status.NOT_FOUND,
    'message_not_found',
  );
  await assertRefused(panel.call('RequeueMessage', { ...foreign, messageId: id }), status.NOT_FOUND, 'message_not_found');
});

test("another tenant's message id as a search cursor behaves exactly like an id that does not exist", async () => {
  const theirs = await send('welcome', 'theirs@example.com');
  const { rows } = await h.pool.query<{ micros: string; unused: string }>(
    'SELECT (extract(epoch FROM created_at) * 1000000)::bigint::text AS micros, (SELECT max(id) + 1000 FROM messages)::text AS unused FROM messages WHERE id = $1',
    [theirs],
  );
  const { micros, unused } = rows[0]!;
  const mine = { projectId: h.ids.otherProjectId, organizationId: h.ids.organizationId + 1000 };
  // The id alone is no cursor any more, whoever's it is: the same refusal for a real id and a missing one.
  for (const cursor of [String(theirs), unused]) {
    const error = await assertRefused(panel.call('SearchMessages', { ...mine, cursor }), status.INVALID_ARGUMENT, 'invalid_argument');
    assert.deepEqual(error.fields, ['cursor: is not one this service gave']);
  }
  // A cursor names a position, never a row to look up: the page is the same for their message and for no message.
  const at = (id: number | string) => panel.call('SearchMessages', { ...mine, cursor: encodeCursor({ createdMicros: BigInt(micros), id: Number(id) }) });
  assert.deepEqual(await at(theirs), await at(unused));
});

test('a malformed filter or cursor is refused with every fault named', async () => {
  const error = await assertRefused(
    panel.call('SearchMessages', { ...scope, state: 'lost', createdFrom: 'yesterday', cursor: '1 OR 1=1' }),
    status.INVALID_ARGUMENT,
    'invalid_argument',
  );
  assert.deepEqual(error.fields, [
    'state: must be one of scheduled, queued, sending, deferred, sent, failed, bounced, complained, canceled',
    'created_from: must be an ISO-8601 time',
    'cursor: is not one this service gave',
  ]);
});

test('a message page shows the whole timeline and the subject rendered from the version it was accepted with', async () => {
  const id = await send('welcome', 'dora@example.com', { name: '<Dora> & Co' });
  await deliver(id, 'sending', 'deferred', 'sending', 'sent');
  // A later version must not change what this message's subject was.
  await h.admin.call('PutTemplate', { ...scope, slug: 'welcome', subject: 'Changed {{ name }}', html: '<p>x</p>', text: 'x' });

  const view = await panel.call('GetMessageView', { ...scope, messageId: id });
  const message = view.message;
  assert.equal(view.renderedSubject, 'Hello <Dora> & Co');
  assert.equal(view.subjectError, '');
  assert.equal(message?.templateVersion, 1);
  assert.equal(message?.state, 'sent');
  assert.match(message?.celeryTaskId ?? '', /^[0-9a-f-]{36}$/);
  assert.deepEqual(
    message?.events.map((event) => `${event.state}:${event.attempt}:${event.smtpCode}`),
    ['queued:0:0', 'sending:1:0', 'deferred:1:451', 'sending:2:0', 'sent:2:250'],
  );

  const later = await send('welcome', 'dora@example.com', { name: 'Dora' });
  assert.equal((await panel.call('GetMessageView', { ...scope, messageId: later })).renderedSubject, 'Changed Dora');
});

test('a message whose template version was never kept says so instead of guessing a subject', async () => {
  const id = await send('invoice', 'old@example.com');
  await h.pool.query('DELETE FROM template_versions WHERE template_id = (SELECT template_id FROM messages WHERE id = $1)', [id]);
  const view = await panel.call('GetMessageView', { ...scope, messageId: id });
  assert.equal(view.renderedSubject, '');
  assert.match(view.subjectError, /version \d+ of "invoice" was not kept/);
});

test('the overview counts accepted, sent, deferred and failed messages of the project in every bucket of the hour and the day', async () => {
  const before = await panel.call('GetOverview', scope);
  const [sent, retried, failed] = [await send('welcome', 'o1@example.com'), await send('welcome', 'o2@example.com'), await send('welcome', 'o3@example.com')];
  await deliver(sent, 'sending', 'sent');
  await deliver(retried, 'sending', 'deferred', 'sending', 'sent');
  await deliver(failed, 'sending', 'failed');
  const after = await panel.call('GetOverview', scope);

  for (const [name, series, width, count] of [
    ['hour', 'lastHour', 300, 12],
    ['day', 'lastDay', 3_600, 24],
  ] as const) {
    const buckets = after[series]?.buckets ?? [];
    assert.equal(after[series]?.bucketSeconds, width, name);
    assert.equal(buckets.length, count, name);
    const starts = buckets.map((bucket) => Date.parse(bucket.start));
    assert.ok(
      starts.every((start, index) => index === 0 || start - (starts[index - 1] ?? 0) === width * 1000),
      `${name}: contiguous buckets`,
    );
    const last = starts.at(-1) ?? 0;
    assert.ok(last <= Date.parse(after.asOf) && Date.parse(after.asOf) < last + width * 1000, `${name}: the last bucket holds now`);
    const total = (overview: typeof after, kind: 'accepted' | 'sent' | 'deferred' | 'failed') =>
      (overview[series]?.buckets ?? []).reduce((sum, bucket) => sum + bucket[kind], 0);
    assert.deepEqual(
      {
        accepted: total(after, 'accepted') - total(before, 'accepted'),
        sent: total(after, 'sent') - total(before, 'sent'),
        deferred: total(after, 'deferred') - total(before, 'deferred'),
        failed: total(after, 'failed') - total(before, 'failed'),
      },
      { accepted: 3, sent: 2, deferred: 1, failed: 1 },
      name,
    );
  }
  const foreign = await panel.call('GetOverview', { projectId: scope.projectId, organizationId: scope.organizationId + 1000 });
  assert.equal(
    foreign.lastDay?.buckets.reduce((sum, bucket) => sum + bucket.accepted + bucket.sent, 0),
    0,
    "another organization's counts are its own",
  );
});

test("a template preview renders sample data made from the template's variables, escaped in the HTML", async () => {
  await h.admin.call('PutTemplate', {
    ...scope,
    slug: 'preview',
    subject: 'For {{ name }} ({{ plan }})',
    html: '<b>{{ name }}</b>',
    text: '{{ name }}',
    active: false,
    variablesSchemaJson: JSON.stringify({ type: 'object', required: ['name'], properties: { name: { type: 'string' }, plan: { enum: ['gold', 'silver'] } } }),
  });
  const sample = await panel.call('PreviewTemplate', { ...scope, slug: 'preview' });
  assert.deepEqual(JSON.parse(sample.dataJson), { name: 'Name', plan: 'gold' });
  assert.equal(sample.subject, 'For Name (gold)');
  assert.equal(sample.template?.active, false);
  assert.deepEqual(sample.dataFaults, []);

  const given = await panel.call('PreviewTemplate', { ...scope, slug: 'preview', dataJson: '{"name": "<script>x</script>"}' });
  assert.equal(given.html, '<b>&lt;script&gt;x&lt;/script&gt;</b>');
  assert.equal(given.text, '<script>x</script>');
  const wrong = await panel.call('PreviewTemplate', { ...scope, slug: 'preview', dataJson: '{"plan": "bronze"}' });
  assert.deepEqual(wrong.dataFaults, ['name: is required', 'plan: must be equal to one of the allowed values']);

  await assertRefused(panel.call('PreviewTemplate', { ...scope, slug: 'preview', dataJson: '[1]' }), status.INVALID_ARGUMENT, 'invalid_argument');
  await assertRefused(panel.call('PreviewTemplate', { ...scope, slug: 'missing' }), status.NOT_FOUND, 'template_not_found');
  const templates = await panel.call('ListProjectTemplates', scope);
  assert.deepEqual(
    templates.templates.map((template) => template.slug),
    ['invoice', 'preview', 'welcome'],
  );
  // dispatch-svc checks the project's organization itself, not only the gateway.
  const foreign = { projectId: scope.projectId, organizationId: scope.organizationId + 1000 };
  assert.deepEqual((await panel.call('ListProjectTemplates', foreign)).templates, []);
  await assertRefused(panel.call('PreviewTemplate', { ...foreign, slug: 'preview' }), status.NOT_FOUND, 'template_not_found');
});

test('a preview cannot read files: the renderer is the sandboxed one the mailer uses', async () => {
  await h.admin.call('PutTemplate', { ...scope, slug: 'sneaky', subject: "{% include '/etc/passwd' %}", text: 'x' });
  const preview = await panel.call('PreviewTemplate', { ...scope, slug: 'sneaky' });
  assert.equal(preview.subject, '');
  assert.match(preview.renderError, /the subject could not be rendered/);
  assert.doesNotMatch(JSON.stringify(preview), /root:/);
});

test('an operator re-queues a failed message; one that has not failed is left as it is', async () => {
  const failed = await send('welcome', 'again@example.com');
  await deliver(failed, 'sending', 'failed');
  const requeued = await panel.call('RequeueMessage', { ...scope, messageId: failed });
  assert.deepEqual(requeued.requeued, [failed]);
  const view = await panel.call('GetMessageView', { ...scope, messageId: failed });
  assert.equal(view.message?.state, 'queued');
  assert.deepEqual(
    view.message?.events.map((event) => event.state),
    ['queued', 'sending', 'failed', 'queued'],
  );

  const again = await panel.call('RequeueMessage', { ...scope, messageId: failed });
  assert.deepEqual(again.requeued, []);
  assert.deepEqual(again.skipped, [{ messageId: failed, reason: 'not_failed' }]);
});
