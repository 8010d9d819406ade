// API key scopes and the keys:manage routes against the running system (issue 53, item 1): keys made before scopes
// keep sending and reading; a call outside the key's scopes is 403 insufficient_scope naming the scope, before it is
// counted; a keys:manage key issues keys within its own scopes (the secret shown once) and revokes them, and every
// gateway refuses the revoked key at once; another project's key is 404 like a missing one, both ways; a key limited to
// some of the organization's sending domains issues and revokes only keys limited within them; every answer matches the
// OpenAPI document, in English and Spanish.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { assertCoded } from '../../harness/contract-shapes.ts';
import { documentedCall } from '../../harness/documented-call.ts';
import type { ResponseCheck } from '../../harness/openapi.ts';
import type { HttpResult, System, Tenant } from '../../harness/system.ts';
import { startTenantPair } from '../../harness/tenant-pair.ts';
import { anotherKey, validBody } from '../../harness/tenants.ts';
import { waitFor } from '../../harness/wait.ts';

let system: System;
let alpha: Tenant;
let beta: Tenant;
let checkResponse: ResponseCheck;

before(async () => {
  ({ system, alpha, beta, checkResponse } = await startTenantPair('keys', { welcome: true }));
});

after(async () => {
  await system?.stop();
});

/** A call of the keys routes as `caller`, checked against the OpenAPI document. */
const call = (caller: Tenant, method: string, path: string, body?: unknown, headers: Record<string, string> = {}): Promise<HttpResult> =>
  documentedCall(system, checkResponse, caller, {
    method,
    path,
    documented: path.replace(/^\/api\/v1\/api-keys\/[^/]+\/$/, '/api/v1/api-keys/{id}').replace(/\/$/, ''),
    body,
    headers,
  });

const fullKey = (tenant: Tenant, name = 'deploy'): Promise<Tenant> => anotherKey(system, tenant, name, ['full']);

test('a key made before scopes sends and reads as before, and is refused the key routes with insufficient_scope naming keys:manage', async () => {
  const sent = await system.send(alpha, validBody('welcome'));
  assert.equal(sent.status, 202, sent.text);
  const read = await system.request(`/api/v1/messages/${sent.body.message_id}/`, {
    method: 'GET',
    headers: { authorization: `Api-Key ${alpha.apiKey}`, 'x-organization-id': String(alpha.organizationId) },
  });
  assert.equal(read.status, 200, read.text);
  const { rows } = await system.db.query<{ scopes: string[] }>('SELECT scopes FROM api_keys WHERE id = $1', [alpha.keyId]);
  assert.deepEqual(rows[0]?.scopes, ['send', 'messages:read'], 'the default is the sending preset');

  const refused = await call(alpha, 'GET', '/api/v1/api-keys/');
  assertCoded(refused, 403, 'insufficient_scope');
  assert.match(String(refused.body.detail), /keys:manage/);
  assert.equal(refused.headers.get('ratelimit'), null, 'refused before it is counted');
  const spanish = await call(alpha, 'GET', '/api/v1/api-keys/', undefined, { 'accept-language': 'es' });
  assertCoded(spanish, 403, 'insufficient_scope');
  assert.match(String(spanish.body.detail), /no tiene el permiso "keys:manage"/);
  assert.equal(spanish.headers.get('content-language'), 'es');
});

test('a key without send is refused a send and a batch with insufficient_scope, and without messages:read a read', async () => {
  const manager = await anotherKey(system, alpha, 'manager-only', ['keys:manage']);
  const send = await system.send(manager, validBody('welcome'));
  assertCoded(send, 403, 'insufficient_scope');
  assert.match(String(send.body.detail), /"send"/);
  const batch = await system.request('/api/v1/send/batch/', {
    method: 'POST',
    headers: { authorization: `Api-Key ${manager.apiKey}`, 'x-organization-id': String(manager.organizationId), 'content-type': 'application/json' },
    body: JSON.stringify({ messages: [validBody('welcome')] }),
  });
  assertCoded(batch, 403, 'insufficient_scope');
  const list = await system.request('/api/v1/messages/', {
    method: 'GET',
    headers: { authorization: `Api-Key ${manager.apiKey}`, 'x-organization-id': String(manager.organizationId) },
  });
  assertCoded(list, 403, 'insufficient_scope');
  assert.match(String(list.body.detail), /messages:read/);
  const { rows } = await system.db.query<{ count: number }>('SELECT count(*)::int AS count FROM messages WHERE api_key_id = $1', [manager.keyId]);
  assert.equal(rows[0]?.count, 0, 'nothing was written');
});

test('keys:manage issues a key within its own scopes, shown once, lists the project keys without secrets, and revokes it everywhere', async () => {
  const deploy = await fullKey(alpha);
  const created = await call(deploy, 'POST', '/api/v1/api-keys/', { name: 'ci sender', scopes: ['sending'] });
  assert.equal(created.status, 201, created.text);
  assert.deepEqual(created.body.scopes, ['send', 'messages:read']);
  assert.match(String(created.body.key), /^nk_[0-9a-f]{16}\.[A-Za-z0-9_-]{43}$/);
  const issued: Tenant = { ...alpha, keyId: Number(created.body.id), apiKey: String(created.body.key) };
  assert.equal((await system.send(issued, validBody('welcome'))).status, 202, 'the new key sends');

  const listed = await call(deploy, 'GET', '/api/v1/api-keys/');
  assert.equal(listed.status, 200, listed.text);
  const keys = listed.body.results as Array<Record<string, unknown>>;
  assert.deepEqual(
    keys.map((key) => key.id),
    [alpha.keyId, ...keys.slice(1).map((key) => key.id)],
    'oldest first',
  );
  assert.ok(keys.some((key) => key.id === issued.keyId && key.prefix === issued.apiKey.split('.')[0]));
  assert.ok(!listed.text.includes(issued.apiKey.split('.')[1] ?? '-'), 'no secret in the listing');

  const revoked = await call(deploy, 'DELETE', `/api/v1/api-keys/${issued.keyId}/`);
  assert.equal(revoked.status, 200, revoked.text);
  assert.notEqual(revoked.body.revoked_at, null);
  await waitFor(async () => (await system.send(issued, validBody('welcome'))).status === 401, { timeoutMs: 3_000, what: 'the revoked key refused' });
  const again = await call(deploy, 'DELETE', `/api/v1/api-keys/${issued.keyId}/`);
  assert.equal(again.body.revoked_at, revoked.body.revoked_at, 'revoking twice answers the same record');
});

test('no key hands out or takes away more than it has: a wider key is refused, naming the scope missing, and nothing is written', async () => {
  const narrow = await anotherKey(system, alpha, 'narrow manager', ['keys:manage', 'send']);
  const before = (await system.db.query<{ count: number }>('SELECT count(*)::int AS count FROM api_keys WHERE project_id = $1', [alpha.projectId])).rows[0]
    ?.count;
  const wider = await call(narrow, 'POST', '/api/v1/api-keys/', { name: 'too wide', scopes: ['send', 'templates:write'] });
  assertCoded(wider, 403, 'insufficient_scope');
  assert.match(String(wider.body.detail), /templates:write/);
  const full = await call(narrow, 'POST', '/api/v1/api-keys/', { name: 'full', scopes: ['full'] });
  assertCoded(full, 403, 'insufficient_scope');
  const after = (await system.db.query<{ count: number }>('SELECT count(*)::int AS count FROM api_keys WHERE project_id = $1', [alpha.projectId])).rows[0]
    ?.count;
  assert.equal(after, before, 'no key was made');

  const deploy = await fullKey(alpha, 'full key to keep');
  const refused = await call(narrow, 'DELETE', `/api/v1/api-keys/${deploy.keyId}/`);
  assertCoded(refused, 403, 'insufficient_scope');
  assert.equal((await system.send(deploy, validBody('welcome'))).status, 202, 'the wider key still works');

  const own = await call(narrow, 'POST', '/api/v1/api-keys/', { name: 'just sending', scopes: ['send'], test: true });
  assert.equal(own.status, 201, own.text);
  assert.equal(own.body.test, true);
  assert.match(String(own.body.prefix), /^nk_test_/);
});

test("another project's key is 404 api_key_not_found exactly like a missing one, both ways", async () => {
  const alphaManager = await fullKey(alpha, 'alpha manager');
  const betaManager = await fullKey(beta, 'beta manager');
  for (const [caller, foreign] of [
    [alphaManager, betaManager],
    [betaManager, alphaManager],
  ] as const) {
    const other = await call(caller, 'DELETE', `/api/v1/api-keys/${foreign.keyId}/`);
    const missing = await call(caller, 'DELETE', '/api/v1/api-keys/999999999/');
    for (const response of [other, missing]) assertCoded(response, 404, 'api_key_not_found');
    assert.equal(other.body.detail, missing.body.detail);
    const listed = await call(caller, 'GET', '/api/v1/api-keys/');
    assert.ok(!(listed.body.results as Array<{ id: number }>).some((key) => key.id === foreign.keyId), "the other project's keys are not listed");
    assert.equal((await system.send(foreign, validBody('welcome'))).status, 202, 'the foreign key still works');
  }
});

test('a key body is judged whole: every refused field at once, in the negotiated language, and malformed ids are 404', async () => {
  const deploy = await fullKey(alpha, 'validator');
  const refused = await call(deploy, 'POST', '/api/v1/api-keys/', { name: ' ', scopes: ['send', 'admin'], test: 'yes', extra: 1 });
  assert.equal(refused.status, 422, refused.text);
  assert.deepEqual(Object.keys(refused.body).sort(), ['extra', 'name', 'scopes', 'test']);
  assert.match(String((refused.body.scopes as string[])[0]), /Unknown scope "admin"/);
  const spanish = await call(deploy, 'POST', '/api/v1/api-keys/', { scopes: 'full' }, { 'accept-language': 'es' });
  assert.equal(spanish.status, 422);
  assert.deepEqual(spanish.body, { name: ['Este campo es obligatorio.'], scopes: ['Se esperaba una lista de cadenas de texto.'] });
  assertCoded(await call(deploy, 'POST', '/api/v1/api-keys/', '{', { 'content-type': 'application/json' }), 400, 'parse_error');
  for (const id of ['abc', '0', '99999999999999999999']) assertCoded(await call(deploy, 'DELETE', `/api/v1/api-keys/${id}/`), 404, 'api_key_not_found');
});

/** Adds sending domains to `tenant`'s organization over the API, as `manager` (a key with domains:write). */
async function addDomains(manager: Tenant, ...domains: string[]): Promise<void> {
  for (const domain of domains) {
    const added = await call(manager, 'POST', '/api/v1/domains/', { domain });
    assert.equal(added.status, 201, added.text);
  }
}

const projectKeyCount = async (projectId: number): Promise<number> =>
  (await system.db.query<{ count: number }>('SELECT count(*)::int AS count FROM api_keys WHERE project_id = $1', [projectId])).rows[0]?.count ?? -1;

/** The key an answer issued, to call with. */
const issuedKey = (tenant: Tenant, created: HttpResult): Tenant => ({ ...tenant, keyId: Number(created.body.id), apiKey: String(created.body.key) });

test('a key is limited to sending domains of its organization, kept lower case, once each and sorted, and listed; any other is 422 naming it, in English and Spanish', async () => {
  const deploy = await fullKey(alpha, 'domains deploy');
  await addDomains(deploy, 'mail.keys-alpha.example', 'news.keys-alpha.example');
  await addDomains(await fullKey(beta, 'beta domains'), 'mail.keys-beta.example');

  const created = await call(deploy, 'POST', '/api/v1/api-keys/', {
    name: 'newsletter',
    scopes: ['send'],
    from_domains: ['NEWS.keys-alpha.example.', 'mail.keys-alpha.example', 'news.keys-alpha.example'],
  });
  assert.equal(created.status, 201, created.text);
  assert.deepEqual(created.body.from_domains, ['mail.keys-alpha.example', 'news.keys-alpha.example']);
  const audited = await system.db.query<{ detail: { from_domains: string[] } }>(
    "SELECT detail FROM audit_events WHERE action = 'api_key.create' AND target = $1",
    [String(created.body.id)],
  );
  assert.deepEqual(audited.rows[0]?.detail.from_domains, ['mail.keys-alpha.example', 'news.keys-alpha.example'], 'the audit row records them');
  const listed = (await call(deploy, 'GET', '/api/v1/api-keys/')).body.results as Array<{ id: number; from_domains: string[] }>;
  assert.deepEqual(listed.find((key) => key.id === created.body.id)?.from_domains, ['mail.keys-alpha.example', 'news.keys-alpha.example']);
  assert.deepEqual(listed.find((key) => key.id === alpha.keyId)?.from_domains, [], 'no limit');

  const before = await projectKeyCount(alpha.projectId);
  const unknown = await call(deploy, 'POST', '/api/v1/api-keys/', { name: 'elsewhere', from_domains: ['mail.keys-beta.example', 'nowhere.example'] });
  assert.equal(unknown.status, 422, unknown.text);
  assert.deepEqual(unknown.body, {
    from_domains: [
      '"mail.keys-beta.example" is not a sending domain of the organization of this API key.',
      '"nowhere.example" is not a sending domain of the organization of this API key.',
    ],
  });
  const spanish = await call(deploy, 'POST', '/api/v1/api-keys/', { name: 'elsewhere', from_domains: ['nowhere.example'] }, { 'accept-language': 'es' });
  assert.deepEqual(spanish.body, { from_domains: ['"nowhere.example" no es un dominio de envío de la organización de esta clave de API.'] });
  const shapes = await call(deploy, 'POST', '/api/v1/api-keys/', { name: 'many', from_domains: Array.from({ length: 51 }, (_, i) => `d${i}.example`) });
  assert.deepEqual(shapes.body, { from_domains: ['A key may be limited to at most 50 domains.'] });
  assert.deepEqual((await call(deploy, 'POST', '/api/v1/api-keys/', { name: 'blank', from_domains: [' ', ' . '] })).body.from_domains, [
    'Enter a domain name such as mail.example.com: letters, digits and hyphens in labels of at most 63, at least two labels.',
  ]);
  assert.deepEqual((await call(deploy, 'POST', '/api/v1/api-keys/', { name: 'text', from_domains: 'mail.keys-alpha.example' })).body.from_domains, [
    'Expected a list of strings.',
  ]);
  assert.equal(await projectKeyCount(alpha.projectId), before, 'nothing was written');
});

test('a limited key issues keys within its domains, its own when it names none; it may not widen them nor revoke a key beyond them (403 from_domain_not_allowed)', async () => {
  const deploy = await fullKey(alpha, 'limit deploy');
  await addDomains(deploy, 'shop.keys-alpha.example', 'billing.keys-alpha.example');
  const limitedAnswer = await call(deploy, 'POST', '/api/v1/api-keys/', { name: 'shop manager', scopes: ['full'], from_domains: ['shop.keys-alpha.example'] });
  assert.equal(limitedAnswer.status, 201, limitedAnswer.text);
  const limited = issuedKey(alpha, limitedAnswer);

  const inherited = await call(limited, 'POST', '/api/v1/api-keys/', { name: 'shop sender', scopes: ['send'] });
  assert.equal(inherited.status, 201, inherited.text);
  assert.deepEqual(inherited.body.from_domains, ['shop.keys-alpha.example'], "the caller's own limit when none is named");

  const before = await projectKeyCount(alpha.projectId);
  const wider = await call(limited, 'POST', '/api/v1/api-keys/', { name: 'wider', from_domains: ['shop.keys-alpha.example', 'billing.keys-alpha.example'] });
  assertCoded(wider, 403, 'from_domain_not_allowed');
  assert.equal(wider.body.detail, 'This API key may not send From "billing.keys-alpha.example", so it may not issue or revoke a key that may.');
  const spanish = await call(
    limited,
    'POST',
    '/api/v1/api-keys/',
    { name: 'wider', from_domains: ['billing.keys-alpha.example'] },
    { 'accept-language': 'es' },
  );
  assertCoded(spanish, 403, 'from_domain_not_allowed');
  assert.match(String(spanish.body.detail), /^Esta clave de API no puede enviar desde "billing\.keys-alpha\.example"/);
  assert.equal(await projectKeyCount(alpha.projectId), before, 'nothing was written');

  const unlimited = await call(deploy, 'POST', '/api/v1/api-keys/', { name: 'any domain', scopes: ['send'] });
  const both = await call(deploy, 'POST', '/api/v1/api-keys/', {
    name: 'both',
    scopes: ['send'],
    from_domains: ['shop.keys-alpha.example', 'billing.keys-alpha.example'],
  });
  const refusedUnlimited = await call(limited, 'DELETE', `/api/v1/api-keys/${unlimited.body.id}/`);
  assertCoded(refusedUnlimited, 403, 'from_domain_not_allowed');
  assert.equal(refusedUnlimited.body.detail, 'This API key may send From only some domains, so it may not revoke a key that may send From any.');
  const refusedSpanish = await call(limited, 'DELETE', `/api/v1/api-keys/${unlimited.body.id}/`, undefined, { 'accept-language': 'es' });
  assert.match(String(refusedSpanish.body.detail), /^Esta clave de API solo puede enviar desde algunos dominios/);
  const refusedBoth = await call(limited, 'DELETE', `/api/v1/api-keys/${both.body.id}/`);
  assertCoded(refusedBoth, 403, 'from_domain_not_allowed');
  assert.match(String(refusedBoth.body.detail), /"billing\.keys-alpha\.example"/);
  const { rows } = await system.db.query<{ count: number }>('SELECT count(*)::int AS count FROM api_keys WHERE id = ANY($1) AND revoked_at IS NULL', [
    [unlimited.body.id, both.body.id],
  ]);
  assert.equal(rows[0]?.count, 2, 'neither was revoked');

  const revoked = await call(limited, 'DELETE', `/api/v1/api-keys/${inherited.body.id}/`);
  assert.equal(revoked.status, 200, revoked.text);
  assert.deepEqual(revoked.body.from_domains, ['shop.keys-alpha.example']);
  assert.equal((await call(limited, 'DELETE', `/api/v1/api-keys/${limited.keyId}/`)).status, 200, 'a limited key may revoke itself');
});
