import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { status } from '@grpc/grpc-js';
import { GrpcClient } from '@notify/platform';
import { type dispatch, dispatchProto } from '@notify/proto';
import { assertRefused } from '@notify/test/harness/refusal.ts';
import { type Harness, startHarness } from '../testing/harness.ts';

let h: Harness;

before(async () => {
  h = await startHarness();
});

after(() => h.close());

const put = (overrides: Partial<dispatch.PutTemplateRequest> = {}) =>
  h.admin.call('PutTemplate', {
    projectId: h.ids.projectId,
    slug: 'receipt',
    subject: 'Receipt {{ order }}',
    html: '<p>{{ order }}</p>',
    text: '',
    ...overrides,
  });

test('a new template starts at version 1 and inactive unless asked', async () => {
  const created = await put();
  assert.equal(created.version, 1);
  assert.equal(created.active, false);
  assert.equal(created.slug, 'receipt');
  assert.equal(created.projectId, h.ids.projectId);
  assert.equal(created.variablesSchemaJson, '');
  const active = await put({ slug: 'active-from-start', active: true });
  assert.equal(active.active, true);
});

test('putting new content bumps the version and keeps the active flag unless given', async () => {
  await h.admin.call('SetTemplateActive', { projectId: h.ids.projectId, slug: 'receipt', active: true });
  const second = await put({ subject: 'Your receipt' });
  assert.equal(second.version, 2);
  assert.equal(second.active, true);
  assert.equal(second.subject, 'Your receipt');
  const third = await put({ active: false });
  assert.equal(third.version, 3);
  assert.equal(third.active, false);
});

test('a message keeps the template version it was accepted with', async () => {
  const slug = 'versioned';
  await put({ slug, subject: 'v1', active: true });
  const send = () =>
    h.dispatch.call('Send', {
      projectId: h.ids.projectId,
      organizationId: h.ids.organizationId,
      apiKeyId: h.ids.apiKeyId,
      template: slug,
      to: 'a@example.com',
      dataJson: '{}',
    });
  const first = await send();
  await put({ slug, subject: 'v2' });
  const second = await send();
  const versions = await Promise.all(
    [first, second].map((response) =>
      h.dispatch.call('GetMessage', { projectId: h.ids.projectId, organizationId: h.ids.organizationId, messageId: response.messageId }),
    ),
  );
  assert.deepEqual(
    versions.map((message) => message.templateVersion),
    [1, 2],
  );
});

test('a variables schema is stored, returned and enforced from the next version', async () => {
  const schema = { type: 'object', required: ['order'], properties: { order: { type: 'string' } } };
  const saved = await put({ slug: 'with-schema', variablesSchemaJson: JSON.stringify(schema), active: true });
  assert.deepEqual(JSON.parse(saved.variablesSchemaJson), schema);
  const fetched = await h.admin.call('GetTemplate', { projectId: h.ids.projectId, slug: 'with-schema' });
  assert.deepEqual(fetched, saved);
  await assertRefused(
    h.dispatch.call('Send', {
      projectId: h.ids.projectId,
      organizationId: h.ids.organizationId,
      apiKeyId: h.ids.apiKeyId,
      template: 'with-schema',
      to: 'a@example.com',
      dataJson: '{}',
    }),
    status.INVALID_ARGUMENT,
    'data_invalid',
  );
});

test('an invalid template is refused with every fault named', async () => {
  const error = await assertRefused(
    put({ slug: 'bad slug!', subject: ' ', html: '', text: '', variablesSchemaJson: '{not json' }),
    status.INVALID_ARGUMENT,
    'invalid_argument',
  );
  assert.deepEqual(error.fields, [
    'slug: must be 1-100 characters of A-Z, a-z, 0-9, _ and -',
    'subject: is required',
    'html: html or text is required',
    'variables_schema: is not valid JSON',
  ]);
});

test('a schema that is not a valid JSON Schema is refused', async () => {
  const error = await assertRefused(
    put({ variablesSchemaJson: '{"type":"object","properties":{"a":{"type":"strng"}}}' }),
    status.INVALID_ARGUMENT,
    'invalid_argument',
  );
  assert.match(error.fields[0] ?? '', /^variables_schema: schema is invalid/);
  const typo = await assertRefused(put({ variablesSchemaJson: '{"type":"object","requird":["a"]}' }), status.INVALID_ARGUMENT, 'invalid_argument');
  assert.match(typo.fields[0] ?? '', /unknown keyword: "requird"/);
});

test('Liquid syntax errors are refused with where they are', async () => {
  const error = await assertRefused(put({ subject: 'Hi {{ name', html: '{% if vip %}<b>VIP</b>' }), status.INVALID_ARGUMENT, 'invalid_argument');
  assert.equal(error.fields.length, 2);
  assert.match(error.fields[0] ?? '', /^subject: .*not closed, line:1, col:4/);
  assert.match(error.fields[1] ?? '', /^html: tag \{% if vip %\} not closed/);
});

test('a template for an unknown project is NOT_FOUND', async () => {
  await assertRefused(put({ projectId: 987_654 }), status.NOT_FOUND, 'project_not_found');
});

test('activating, reading and listing', async () => {
  const activated = await h.admin.call('SetTemplateActive', { projectId: h.ids.projectId, slug: 'receipt', active: true });
  assert.equal(activated.active, true);
  assert.equal(activated.version, 3, 'activation is not a new version');
  await assertRefused(h.admin.call('SetTemplateActive', { projectId: h.ids.projectId, slug: 'missing', active: true }), status.NOT_FOUND, 'template_not_found');
  await assertRefused(h.admin.call('GetTemplate', { projectId: h.ids.projectId, slug: 'missing' }), status.NOT_FOUND, 'template_not_found');
  await assertRefused(h.admin.call('GetTemplate', { projectId: h.ids.otherProjectId, slug: 'receipt' }), status.NOT_FOUND, 'template_not_found');
  const listed = await h.admin.call('ListTemplates', { projectId: h.ids.projectId });
  assert.deepEqual(
    listed.templates.map((template) => template.slug),
    ['active-from-start', 'receipt', 'versioned', 'with-schema'],
  );
  assert.deepEqual((await h.admin.call('ListTemplates', { projectId: h.ids.otherProjectId })).templates, []);
});

test('TemplateAdminService refuses the gateway token as out of its lane', async () => {
  const client = new GrpcClient(dispatchProto.TemplateAdminService.service, h.address, { token: h.callers.gateway.token, deadlineMs: 2_000 });
  try {
    await assertRefused(client.call('ListTemplates', { projectId: h.ids.projectId }), status.PERMISSION_DENIED, 'permission_denied');
  } finally {
    client.close();
  }
});

test('the unsubscribe flag is off for a new template, kept by a put that does not give it, and carried by the job', async () => {
  const created = await put({ slug: 'newsletter', active: true });
  assert.equal(created.unsubscribe, false);
  const marked = await put({ slug: 'newsletter', unsubscribe: true });
  assert.deepEqual([marked.version, marked.unsubscribe], [2, true]);
  const kept = await put({ slug: 'newsletter', subject: 'News' });
  assert.deepEqual([kept.version, kept.unsubscribe], [3, true]);
  assert.equal((await h.admin.call('GetTemplate', { projectId: h.ids.projectId, slug: 'newsletter' })).unsubscribe, true);
  await h.acceptMessage({ template: 'newsletter' });
  assert.equal((await h.lastJob()).job.template.unsubscribe, true);
  const cleared = await put({ slug: 'newsletter', unsubscribe: false });
  assert.equal(cleared.unsubscribe, false);
  await h.acceptMessage({ template: 'newsletter' });
  assert.equal((await h.lastJob()).job.template.unsubscribe, false);
});

test("the panel toggles the unsubscribe flag without a new version, only for the organization's template", async () => {
  const panel = new GrpcClient(dispatchProto.PanelService.service, h.address, { token: h.callers.gateway.token, deadlineMs: 5_000 });
  try {
    const before = await put({ slug: 'digest' });
    const scope = { projectId: h.ids.projectId, organizationId: h.ids.organizationId, slug: 'digest' };
    const on = await panel.call('SetProjectTemplateUnsubscribe', { ...scope, unsubscribe: true });
    assert.deepEqual([on.version, on.unsubscribe], [before.version, true]);
    assert.equal(
      (await panel.call('ListProjectTemplates', { projectId: h.ids.projectId, organizationId: h.ids.organizationId })).templates.find(
        (each) => each.slug === 'digest',
      )?.unsubscribe,
      true,
    );
    await assertRefused(
      panel.call('SetProjectTemplateUnsubscribe', { ...scope, organizationId: h.ids.organizationId + 1_000, unsubscribe: false }),
      status.NOT_FOUND,
      'template_not_found',
    );
    await assertRefused(panel.call('SetProjectTemplateUnsubscribe', { ...scope, slug: 'missing', unsubscribe: false }), status.NOT_FOUND, 'template_not_found');
    assert.equal((await h.admin.call('GetTemplate', { projectId: h.ids.projectId, slug: 'digest' })).unsubscribe, true);
  } finally {
    panel.close();
  }
});
