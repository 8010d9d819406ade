// Tenants are isolated both ways, and a revoked key stops working everywhere within seconds.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { type System, startSystem, type Tenant } from '../../harness/system.ts';

let system: System;
let alpha: Tenant;
let beta: Tenant;
const body = (template: string) => ({ template, to: 'someone@example.com', channel: 'email', data: { name: 'Someone' } });

before(async () => {
  system = await startSystem();
  alpha = await system.createTenant('alpha');
  beta = await system.createTenant('beta');
  await system.putTemplate(alpha.projectId, 'alpha-only');
  await system.putTemplate(beta.projectId, 'beta-only');
});

after(async () => {
  await system?.stop();
});

test("a tenant's key cannot use another tenant's template, in either direction", async () => {
  for (const [caller, foreign] of [
    [alpha, 'beta-only'],
    [beta, 'alpha-only'],
  ] as const) {
    const response = await system.send(caller, body(foreign));
    assert.equal(response.status, 404, response.text);
    assert.deepEqual(Object.keys(response.body).sort(), ['code', 'detail']);
    assert.equal(response.body.code, 'template_not_found');
  }
  assert.equal((await system.send(alpha, body('alpha-only'))).status, 202);
  assert.equal((await system.send(beta, body('beta-only'))).status, 202);
});

test("a tenant's key cannot act on another tenant's organization, in either direction", async () => {
  for (const [caller, other] of [
    [alpha, beta],
    [beta, alpha],
  ] as const) {
    const response = await system.send({ apiKey: caller.apiKey, organizationId: other.organizationId }, body('alpha-only'));
    assert.equal(response.status, 403, response.text);
    assert.deepEqual(response.body, { detail: response.body.detail, code: 'permission_denied' });
    assert.equal(typeof response.body.detail, 'string');
  }
  const { rows } = await system.db.query<{ count: number }>(
    'SELECT count(*)::int AS count FROM messages WHERE organization_id <> (SELECT organization_id FROM projects WHERE id = messages.project_id)',
  );
  assert.equal(rows[0]?.count, 0);
});

test('a key revoked with notifyctl is refused within 2 seconds', async () => {
  const tenant = await system.createTenant('revoked');
  await system.putTemplate(tenant.projectId, 'welcome');
  // Warm every cache on the way with a successful send first.
  assert.equal((await system.send(tenant, body('welcome'))).status, 202);

  const revoke = await system.notifyctl('key', 'revoke', '--id', String(tenant.keyId));
  assert.equal(revoke.code, 0, revoke.stderr);
  const revokedAt = Date.now();
  let response = await system.send(tenant, body('welcome'));
  while (response.status !== 401 && Date.now() - revokedAt < 2_000) {
    await new Promise((resolve) => setTimeout(resolve, 50));
    response = await system.send(tenant, body('welcome'));
  }
  assert.equal(response.status, 401, `still ${response.status} ${Date.now() - revokedAt} ms after revocation`);
  assert.deepEqual(Object.keys(response.body), ['detail']);
  assert.equal(response.headers.get('www-authenticate'), 'Api-Key');
});

test('requests without a valid Api-Key are refused with 401 and the Api-Key challenge', async () => {
  const cases: Record<string, string | undefined> = {
    missing: undefined,
    'other scheme': `Bearer ${alpha.apiKey}`,
    'no scheme': alpha.apiKey,
    'unknown key': 'Api-Key nk_0000000000000000.AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA',
  };
  for (const [label, authorization] of Object.entries(cases)) {
    const headers: Record<string, string> = { 'x-organization-id': String(alpha.organizationId), 'content-type': 'application/json' };
    if (authorization !== undefined) headers.authorization = authorization;
    const response = await system.request('/api/v1/send/', { method: 'POST', headers, body: JSON.stringify(body('alpha-only')) });
    assert.equal(response.status, 401, `${label}: ${response.text}`);
    assert.deepEqual(Object.keys(response.body), ['detail'], label);
    assert.equal(response.headers.get('www-authenticate'), 'Api-Key', label);
  }
});

test('invalid fields are all reported at once with 422 and nothing is written', async () => {
  const before = await system.db.query<{ count: number }>('SELECT count(*)::int AS count FROM messages');
  const response = await system.send(alpha, { template: 'bad slug!', to: 'not-an-email', channel: 'sms', data: [], extra: 1 });
  assert.equal(response.status, 422, response.text);
  assert.deepEqual(Object.keys(response.body).sort(), ['channel', 'data', 'extra', 'template', 'to']);
  for (const messages of Object.values(response.body)) {
    assert.ok(Array.isArray(messages) && messages.length > 0 && messages.every((message) => typeof message === 'string'));
  }
  assert.deepEqual(response.body.extra, ['Unknown field.']);
  const afterCount = await system.db.query<{ count: number }>('SELECT count(*)::int AS count FROM messages');
  assert.equal(afterCount.rows[0]?.count, before.rows[0]?.count);
});
