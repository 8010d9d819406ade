// Templates over the public API against the running system (issue 53, item 2): a key with templates:write creates,
// reads, updates (a new immutable version, active unless told otherwise), activates and deletes its project's
// templates, each change guarded by the template's ETag (412 stale, 428 none) and recorded in the audit log; sends use
// the active version, and a deleted template's messages keep their content. The render answers the mail or each error
// with its part, line and column, and never sends. Another project's templates are never seen nor touched, both ways;
// every answer matches the OpenAPI document.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { assertCoded, assertFieldErrors } from '../../harness/contract-shapes.ts';
import { documentedCall } from '../../harness/documented-call.ts';
import type { ResponseCheck } from '../../harness/openapi.ts';
import type { HttpResult, System, Tenant } from '../../harness/system.ts';
import { startTenantPair } from '../../harness/tenant-pair.ts';
import { anotherKey, validBody } from '../../harness/tenants.ts';

let system: System;
let alpha: Tenant;
let beta: Tenant;
let checkResponse: ResponseCheck;

before(async () => {
  ({ system, alpha, beta, checkResponse } = await startTenantPair('templates'));
});

after(async () => {
  await system?.stop();
});

/** The documented path of a call's path. */
const documented = (path: string): string =>
  path
    .replace(/\?.*$/, '')
    .replace(/^\/api\/v1\/templates\/(?!render\/?$)[^/]+/, '/api/v1/templates/{slug}')
    .replace(/\/versions\/\d+/, '/versions/{version}')
    .replace(/\/$/, '');

/** A call of the template routes as `caller`, checked against the OpenAPI document. */
const call = (caller: Tenant, method: string, path: string, body?: unknown, headers: Record<string, string> = {}): Promise<HttpResult> =>
  documentedCall(system, checkResponse, caller, { method, path, documented: documented(path), body, headers });

const writer = (tenant: Tenant, scopes = ['templates:read', 'templates:write', 'send', 'messages:read']): Promise<Tenant> =>
  anotherKey(system, tenant, `templates ${scopes.join(' ')}`, scopes);

const content = (subject: string) => ({ subject, html: `<p>${subject} {{ name }}</p>`, text: `${subject} {{ name }}` });

async function auditActions(tenant: Tenant, slug: string): Promise<string[]> {
  const { rows } = await system.db.query<{ action: string }>('SELECT action FROM audit_events WHERE project_id = $1 AND target = $2 ORDER BY id', [
    tenant.projectId,
    slug,
  ]);
  return rows.map((row) => row.action);
}

/** The template version a send through the API is accepted with. */
async function sentVersion(key: Tenant, slug: string): Promise<number> {
  const sent = await system.send(key, validBody(slug, { data: { name: 'Ada' } }));
  assert.equal(sent.status, 202, sent.text);
  const { rows } = await system.db.query<{ version: number }>('SELECT template_version AS version FROM messages WHERE id = $1', [sent.body.message_id]);
  return rows[0]?.version ?? 0;
}

test('create, read with its ETag, update as a new version, list; each change audited', async () => {
  const key = await writer(alpha);
  const created = await call(key, 'POST', '/api/v1/templates/', { slug: 'receipt', ...content('Receipt'), variables_schema: { type: 'object' } });
  assert.equal(created.status, 201, created.text);
  assert.deepEqual([created.body.active_version, created.body.latest_version, created.body.active], [1, 1, true]);
  const etag = created.headers.get('etag') ?? '';
  assert.match(etag, /^"[^"]+"$/);
  assertCoded(await call(key, 'POST', '/api/v1/templates', { slug: 'receipt', ...content('Again') }), 409, 'template_exists');

  const read = await call(key, 'GET', '/api/v1/templates/receipt/');
  assert.equal(read.headers.get('etag'), etag);
  assert.equal(read.body.subject, 'Receipt');
  assert.deepEqual(read.body.variables_schema, { type: 'object' });

  const updated = await call(key, 'PUT', '/api/v1/templates/receipt/', content('Receipt v2'), { 'if-match': etag });
  assert.equal(updated.status, 200, updated.text);
  assert.deepEqual([updated.body.active_version, updated.body.latest_version, updated.body.subject], [2, 2, 'Receipt v2']);
  assert.notEqual(updated.headers.get('etag'), etag);
  assert.equal(await sentVersion(key, 'receipt'), 2);

  const listed = await call(key, 'GET', '/api/v1/templates/?limit=1');
  assert.equal(listed.status, 200, listed.text);
  assert.equal((listed.body.results as unknown[]).length, 1);
  assert.deepEqual(await auditActions(alpha, 'receipt'), ['template.create', 'template.update']);
});

test('an update needs the current ETag: 428 without, 412 when stale, and nothing changes', async () => {
  const key = await writer(alpha);
  const created = await call(key, 'POST', '/api/v1/templates/', { slug: 'guarded', ...content('One') });
  const etag = created.headers.get('etag') ?? '';
  assertCoded(await call(key, 'PUT', '/api/v1/templates/guarded/', content('Two')), 428, 'precondition_required');
  const first = await call(key, 'PUT', '/api/v1/templates/guarded/', content('Two'), { 'if-match': etag });
  assert.equal(first.status, 200);
  assertCoded(await call(key, 'PUT', '/api/v1/templates/guarded/', content('Three'), { 'if-match': etag }), 412, 'precondition_failed');
  assertCoded(await call(key, 'DELETE', '/api/v1/templates/guarded/', undefined, { 'if-match': etag }), 412, 'precondition_failed');
  assertCoded(await call(key, 'DELETE', '/api/v1/templates/guarded/'), 428, 'precondition_required');
  const read = await call(key, 'GET', '/api/v1/templates/guarded');
  assert.deepEqual([read.body.subject, read.body.latest_version], ['Two', 2]);
});

test('a version kept aside, listed, read and activated later; an older one activated again; numbers never reused', async () => {
  const key = await writer(alpha);
  const created = await call(key, 'POST', '/api/v1/templates/', { slug: 'staged', ...content('Live') });
  const draft = await call(
    key,
    'PUT',
    '/api/v1/templates/staged/',
    { ...content('Draft'), activate: false },
    { 'if-match': created.headers.get('etag') ?? '' },
  );
  assert.deepEqual([draft.body.active_version, draft.body.latest_version, draft.body.subject], [1, 2, 'Live']);
  assert.equal(await sentVersion(key, 'staged'), 1, 'sends keep the active version');
  const versions = await call(key, 'GET', '/api/v1/templates/staged/versions/');
  assert.deepEqual(versions.body.results, [
    { version: 2, active: false, created_at: (versions.body.results as Array<{ created_at: string }>)[0]?.created_at },
    { version: 1, active: true, created_at: (versions.body.results as Array<{ created_at: string }>)[1]?.created_at },
  ]);
  const two = await call(key, 'GET', '/api/v1/templates/staged/versions/2/');
  assert.deepEqual([two.body.subject, two.body.active], ['Draft', false]);
  assertCoded(await call(key, 'GET', '/api/v1/templates/staged/versions/9/'), 404, 'template_version_not_found');
  const activated = await call(key, 'POST', '/api/v1/templates/staged/versions/2/activate');
  assert.equal(activated.status, 200, activated.text);
  assert.deepEqual([activated.body.active_version, activated.body.subject], [2, 'Draft']);
  assert.equal(await sentVersion(key, 'staged'), 2);
  assertCoded(
    await call(key, 'POST', '/api/v1/templates/staged/versions/1/activate', undefined, { 'if-match': draft.headers.get('etag') ?? '' }),
    412,
    'precondition_failed',
  );
  const back = await call(key, 'POST', '/api/v1/templates/staged/versions/1/activate');
  const third = await call(key, 'PUT', '/api/v1/templates/staged/', content('Third'), { 'if-match': back.headers.get('etag') ?? '' });
  assert.deepEqual([third.body.active_version, third.body.latest_version], [3, 3]);
  assert.equal((await call(key, 'GET', '/api/v1/templates/staged/versions/2/')).body.subject, 'Draft', 'version 2 kept its content');
  assert.deepEqual(await auditActions(alpha, 'staged'), ['template.create', 'template.update', 'template.activate', 'template.activate', 'template.update']);
});

test('a deleted template is 404 and refused to sends, its messages keep their content, and its slug can be created again', async () => {
  const key = await writer(alpha);
  const created = await call(key, 'POST', '/api/v1/templates/', { slug: 'retired', ...content('Old') });
  const sent = await system.send(key, validBody('retired', { data: { name: 'Ada' } }));
  assert.equal(sent.status, 202);
  const deleted = await call(key, 'DELETE', '/api/v1/templates/retired/', undefined, { 'if-match': created.headers.get('etag') ?? '' });
  assert.equal(deleted.status, 200, deleted.text);
  assertCoded(await call(key, 'GET', '/api/v1/templates/retired/'), 404, 'template_not_found');
  assert.equal((await system.send(key, validBody('retired', { data: { name: 'Ada' } }))).status, 404);
  const message = await system.request(`/api/v1/messages/${sent.body.message_id}/`, {
    method: 'GET',
    headers: { authorization: `Api-Key ${key.apiKey}`, 'x-organization-id': String(key.organizationId) },
  });
  assert.equal(message.status, 200, 'the message is still read');
  const again = await call(key, 'POST', '/api/v1/templates/', { slug: 'retired', ...content('New') });
  assert.equal(again.status, 201);
  assert.equal(again.body.active_version, 1);
  assert.deepEqual(await auditActions(alpha, 'retired'), ['template.create', 'template.delete', 'template.create']);
});

test('render: inline texts or a stored version with data; errors with part, line and column; never sends', async () => {
  const key = await writer(alpha);
  const before = await system.db.query<{ count: number }>('SELECT count(*)::int AS count FROM messages WHERE project_id = $1', [alpha.projectId]);
  const inline = await call(key, 'POST', '/api/v1/templates/render', { subject: 'Hi {{ name }}', html: '<b>{{ name }}</b>', data: { name: '<Ada>' } });
  assert.equal(inline.status, 200, inline.text);
  assert.deepEqual(inline.body, { subject: 'Hi <Ada>', html: '<b>&lt;Ada&gt;</b>', text: '' });

  // A variable the test data lacks is an error where it is used; a condition on it is not.
  const lacking = await call(key, 'POST', '/api/v1/templates/render', {
    subject: 'Hi {{ name }}{% if vip %}!{% endif %}',
    text: 'Your code:\n  {{ code }}',
    data: { name: 'Ada' },
  });
  assert.equal(lacking.status, 422, lacking.text);
  const [undefinedVariable] = lacking.body.errors as Array<Record<string, unknown>>;
  assert.deepEqual([undefinedVariable?.part, undefinedVariable?.line, undefinedVariable?.column], ['text', 2, 6]);
  assert.match(String(undefinedVariable?.message), /undefined variable: code/);

  const broken = await call(key, 'POST', '/api/v1/templates/render/', { subject: 'Hi {{ name', html: 'line one\n  {% iff x %}', text: 'fine' });
  assert.equal(broken.status, 422, broken.text);
  assert.equal(broken.body.code, 'template_invalid');
  assert.deepEqual(
    (broken.body.errors as Array<Record<string, unknown>>).map((error) => [error.part, error.line, error.column]),
    [
      ['subject', 1, 4],
      ['html', 2, 3],
    ],
  );

  await call(key, 'POST', '/api/v1/templates/', { slug: 'rendered', ...content('Stored'), variables_schema: { type: 'object', required: ['name'] } });
  const stored = await call(key, 'POST', '/api/v1/templates/render', { slug: 'rendered', data: { name: 'Grace' } });
  assert.deepEqual(stored.body, { subject: 'Stored', html: '<p>Stored Grace</p>', text: 'Stored Grace' });
  const missing = await call(key, 'POST', '/api/v1/templates/render', { slug: 'rendered', version: 1, data: {} }, { 'accept-language': 'es' });
  assert.equal(missing.status, 422);
  const [fault] = missing.body.errors as Array<Record<string, unknown>>;
  assert.deepEqual([fault?.part, fault?.line, fault?.column], ['data', null, null]);
  assert.match(String(fault?.message), /name/);
  assertCoded(await call(key, 'POST', '/api/v1/templates/render', { slug: 'rendered', version: 5 }), 404, 'template_version_not_found');
  assertFieldErrors(await call(key, 'POST', '/api/v1/templates/render', { slug: 'rendered', subject: 'x', data: [] }), ['data', 'subject']);

  const after = await system.db.query<{ count: number }>('SELECT count(*)::int AS count FROM messages WHERE project_id = $1', [alpha.projectId]);
  assert.equal(after.rows[0]?.count, before.rows[0]?.count, 'no message was written');
  assert.deepEqual(await auditActions(alpha, 'rendered'), ['template.create'], 'a render is not a change');
});

test('bad input: every field at once, in English and in Spanish; a syntax error on save is template_invalid', async () => {
  const key = await writer(alpha);
  const body = { slug: 'bad slug', subject: ' ', html: 5, variables_schema: [], extra: true };
  const english = await call(key, 'POST', '/api/v1/templates/', body);
  assertFieldErrors(english, ['slug', 'subject', 'html', 'variables_schema', 'extra']);
  const spanish = await call(key, 'POST', '/api/v1/templates/', body, { 'accept-language': 'es' });
  assert.equal(spanish.headers.get('content-language'), 'es');
  assert.notDeepEqual(spanish.body.slug, english.body.slug);
  assert.match(String((spanish.body.subject as string[])[0]), /en blanco|vac/);
  const schema = await call(key, 'POST', '/api/v1/templates/', { slug: 'schema', ...content('S'), variables_schema: { type: 'strng' } });
  assertFieldErrors(schema, ['variables_schema']);
  const syntax = await call(key, 'POST', '/api/v1/templates/', { slug: 'syntax', subject: 'ok', html: '<p>\n{% for %}</p>' });
  assert.equal(syntax.status, 422);
  assert.deepEqual(
    (syntax.body.errors as Array<Record<string, unknown>>).map((error) => [error.part, error.line, error.column]),
    [['html', 2, 1]],
  );
  assertFieldErrors(await call(key, 'GET', '/api/v1/templates/?limit=0&cursor=no%20slug&other=1'), ['limit', 'cursor', 'other']);
  assertCoded(await call(key, 'GET', '/api/v1/templates/not%20a%20slug/'), 404, 'template_not_found');
  assertCoded(await call(key, 'GET', '/api/v1/templates/receipt/versions/0/'), 404, 'template_version_not_found');
  assertFieldErrors(await call(key, 'POST', '/api/v1/templates/render', { slug: 'receipt', version: 3_000_000_000 }), ['version']);
});

test('scopes: a sending key may not read, a reader may not change; both are 403 insufficient_scope', async () => {
  assertCoded(await call(alpha, 'GET', '/api/v1/templates/'), 403, 'insufficient_scope');
  assertCoded(await call(alpha, 'POST', '/api/v1/templates/render', { subject: 'x', text: 'y' }), 403, 'insufficient_scope');
  const reader = await writer(alpha, ['templates:read']);
  assert.equal((await call(reader, 'GET', '/api/v1/templates/')).status, 200);
  assertCoded(await call(reader, 'POST', '/api/v1/templates/', { slug: 'nope', ...content('x') }), 403, 'insufficient_scope');
  assertCoded(await call(reader, 'PUT', '/api/v1/templates/receipt/', content('x'), { 'if-match': '*' }), 403, 'insufficient_scope');
  assertCoded(await call(reader, 'DELETE', '/api/v1/templates/receipt/', undefined, { 'if-match': '*' }), 403, 'insufficient_scope');
  assertCoded(await call(reader, 'POST', '/api/v1/templates/receipt/versions/1/activate'), 403, 'insufficient_scope');
});

test("another project's templates are never seen, rendered nor changed, both ways", async () => {
  const alphaKey = await writer(alpha);
  const betaKey = await writer(beta);
  await call(alphaKey, 'POST', '/api/v1/templates/', { slug: 'alpha-only', ...content('A') });
  await call(betaKey, 'POST', '/api/v1/templates/', { slug: 'beta-only', ...content('B') });
  for (const [caller, foreign] of [
    [alphaKey, 'beta-only'],
    [betaKey, 'alpha-only'],
  ] as const) {
    const listed = await call(caller, 'GET', '/api/v1/templates/?limit=100');
    assert.ok(!(listed.body.results as Array<{ slug: string }>).some((template) => template.slug === foreign));
    assertCoded(await call(caller, 'GET', `/api/v1/templates/${foreign}/`), 404, 'template_not_found');
    assertCoded(await call(caller, 'GET', `/api/v1/templates/${foreign}/versions/`), 404, 'template_not_found');
    assertCoded(await call(caller, 'GET', `/api/v1/templates/${foreign}/versions/1/`), 404, 'template_not_found');
    assertCoded(await call(caller, 'PUT', `/api/v1/templates/${foreign}/`, content('X'), { 'if-match': '*' }), 404, 'template_not_found');
    assertCoded(await call(caller, 'DELETE', `/api/v1/templates/${foreign}/`, undefined, { 'if-match': '*' }), 404, 'template_not_found');
    assertCoded(await call(caller, 'POST', `/api/v1/templates/${foreign}/versions/1/activate`), 404, 'template_not_found');
    assertCoded(await call(caller, 'POST', '/api/v1/templates/render', { slug: foreign }), 404, 'template_not_found');
  }
  const { rows } = await system.db.query<{ subject: string }>(
    "SELECT subject FROM templates WHERE slug IN ('alpha-only', 'beta-only') AND deleted_at IS NULL ORDER BY slug",
  );
  assert.deepEqual(
    rows.map((row) => row.subject),
    ['A', 'B'],
    'both are unchanged',
  );
});
