// Webhook endpoints over the public API against the running system (issue 53, item 4): a key with webhooks:write
// creates an endpoint (its secret shown once), lists, reads, updates, rotates the secret of, tests and deletes it, and
// pages its attempts log; each endpoint shows its latest attempt and latest failure; every change leaves an audit row
// with the key and no secret. A URL is refused with the precise reason, in English and Spanish; another project's
// endpoint is 404 exactly like a missing one, both ways; every answer matches the OpenAPI document. The default system
// sends webhooks to public https addresses only, so the test events here are refused by webhook-svc's address policy
// and logged as such; test/e2e/webhooks.test.ts (private targets allowed) receives them signed, before and after a
// rotation.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { assertCoded } from '../../harness/contract-shapes.ts';
import { documentedCall } from '../../harness/documented-call.ts';
import type { ResponseCheck } from '../../harness/openapi.ts';
import type { HttpResult, System, Tenant } from '../../harness/system.ts';
import { startTenantPair } from '../../harness/tenant-pair.ts';
import { anotherKey } from '../../harness/tenants.ts';
import { waitFor } from '../../harness/wait.ts';

let system: System;
let alpha: Tenant;
let beta: Tenant;
let checkResponse: ResponseCheck;

before(async () => {
  ({ system, alpha, beta, checkResponse } = await startTenantPair('webhooks-api'));
});

after(async () => {
  await system?.stop();
});

/** The path as the OpenAPI document names it. */
const documentedPath = (path: string): string =>
  path
    .replace(/\?.*$/, '')
    .replace(/^(\/api\/v1\/webhooks\/)[^/]+/, '$1{id}')
    .replace(/\/$/, '');

/** A call of the webhook routes as `caller`, checked against the OpenAPI document. */
const call = (caller: Tenant, method: string, path: string, body?: unknown, headers?: Record<string, string>): Promise<HttpResult> =>
  documentedCall(system, checkResponse, caller, { method, path, documented: documentedPath(path), body, ...(headers ? { headers } : {}) });

const manager = (tenant: Tenant): Promise<Tenant> => anotherKey(system, tenant, 'webhooks', ['webhooks:write']);

/** An https URL webhook-svc refuses at connect time (loopback), so an attempt is logged at once with the reason. */
const refusedUrl = 'https://127.0.0.1:9/hooks';

async function auditRows(tenant: Tenant, target: number) {
  const { rows } = await system.db.query<{ action: string; api_key_id: number; detail: Record<string, unknown> }>(
    'SELECT action, api_key_id, detail FROM audit_events WHERE project_id = $1 AND target = $2 ORDER BY id',
    [tenant.projectId, String(target)],
  );
  return rows;
}

test('an endpoint is created with its secret shown once, then listed and read without it', async () => {
  const key = await manager(alpha);
  const created = await call(key, 'POST', '/api/v1/webhooks/', { url: 'https://hooks.example.com/notify', event_types: ['message.failed', 'message.sent'] });
  assert.equal(created.status, 201, created.text);
  assert.match(String(created.body.secret), /^whsec_[A-Za-z0-9+/]{43}=$/);
  assert.deepEqual(created.body.event_types, ['message.sent', 'message.failed'], "in the contract's order");
  assert.deepEqual([created.body.enabled, created.body.last_delivery, created.body.last_error], [true, null, null]);
  const id = created.body.id as number;

  const listed = await call(key, 'GET', '/api/v1/webhooks');
  assert.deepEqual(
    (listed.body.results as Array<Record<string, unknown>>).map((endpoint) => [endpoint.id, endpoint.url, 'secret' in endpoint]),
    [[id, 'https://hooks.example.com/notify', false]],
  );
  const read = await call(key, 'GET', `/api/v1/webhooks/${id}/`);
  assert.equal(read.status, 200, read.text);
  assert.equal(read.body.url, 'https://hooks.example.com/notify');
  assert.equal('secret' in read.body, false);
  const all = await call(key, 'POST', '/api/v1/webhooks', { url: 'https://hooks.example.com/all' });
  assert.deepEqual(all.body.event_types, [
    'message.sent',
    'message.deferred',
    'message.failed',
    'message.bounced',
    'message.complained',
    'message.unsubscribed',
  ]);

  const audit = await auditRows(alpha, id);
  assert.deepEqual(audit, [
    { action: 'webhook.create', api_key_id: key.keyId, detail: { url: 'https://hooks.example.com/notify', event_types: ['message.sent', 'message.failed'] } },
  ]);
});

test('a URL is refused with the reason, in English and Spanish; so are an unknown event type and an unknown field', async () => {
  const key = await manager(alpha);
  const cases: Array<[string, RegExp, RegExp]> = [
    ['http://hooks.example.com/notify', /must use https/, /debe usar https/],
    ['https://user:secret@hooks.example.com/', /must not carry a user name or password/, /no debe llevar usuario ni contraseña/],
    ['hooks.example.com/notify', /absolute http or https URL/, /URL http o https absoluta/],
    [`https://hooks.example.com/${'a'.repeat(2_000)}`, /no more than 2000 characters/, /no tenga más de 2000 caracteres/],
  ];
  for (const [url, english, spanish] of cases) {
    const refused = await call(key, 'POST', '/api/v1/webhooks/', { url });
    assert.equal(refused.status, 422, refused.text);
    assert.deepEqual(Object.keys(refused.body), ['url']);
    assert.match(String((refused.body.url as string[])[0]), english);
    const enEspañol = await call(key, 'POST', '/api/v1/webhooks/', { url }, { 'accept-language': 'es' });
    assert.equal(enEspañol.headers.get('content-language'), 'es');
    assert.match(String((enEspañol.body.url as string[])[0]), spanish);
  }
  const several = await call(key, 'POST', '/api/v1/webhooks/', { event_types: ['message.sent', 'message.opened', 7], extra: 1 });
  assert.equal(several.status, 422);
  assert.deepEqual(Object.keys(several.body).sort(), ['event_types', 'extra', 'url']);
  const unknownType = await call(
    key,
    'POST',
    '/api/v1/webhooks/',
    { url: 'https://hooks.example.com/x', event_types: ['message.opened'] },
    { 'accept-language': 'es' },
  );
  assert.match(String((unknownType.body.event_types as string[])[0]), /Tipo de evento desconocido: "message.opened"/);
  const { rows } = await system.db.query<{ count: number }>("SELECT count(*)::int AS count FROM webhook_endpoints WHERE project_id = $1 AND url LIKE '%/x'", [
    alpha.projectId,
  ]);
  assert.equal(rows[0]?.count, 0, 'nothing written');
});

test('an update sets what it gives; disabling and enabling; each change audited', async () => {
  const key = await manager(alpha);
  const id = (await call(key, 'POST', '/api/v1/webhooks/', { url: 'https://hooks.example.com/before' })).body.id as number;
  const moved = await call(key, 'PATCH', `/api/v1/webhooks/${id}/`, { url: 'https://hooks.example.com/after', event_types: ['message.bounced'] });
  assert.equal(moved.status, 200, moved.text);
  assert.deepEqual([moved.body.url, moved.body.event_types, moved.body.enabled], ['https://hooks.example.com/after', ['message.bounced'], true]);
  const disabled = await call(key, 'PATCH', `/api/v1/webhooks/${id}`, { enabled: false });
  assert.deepEqual([disabled.body.url, disabled.body.enabled, disabled.body.disabled_reason], ['https://hooks.example.com/after', false, 'operator']);
  assertCoded(await call(key, 'POST', `/api/v1/webhooks/${id}/test`), 409, 'webhook_disabled');
  const enabled = await call(key, 'PATCH', `/api/v1/webhooks/${id}/`, { enabled: true });
  assert.deepEqual([enabled.body.enabled, enabled.body.disabled_reason], [true, null]);

  const nothing = await call(key, 'PATCH', `/api/v1/webhooks/${id}/`, {});
  assert.equal(nothing.status, 422);
  assert.deepEqual(Object.keys(nothing.body), ['non_field_errors']);
  const plain = await call(key, 'PATCH', `/api/v1/webhooks/${id}/`, { url: 'http://hooks.example.com/plain', enabled: 'yes' });
  assert.deepEqual(Object.keys(plain.body).sort(), ['enabled']);
  const plainOnly = await call(key, 'PATCH', `/api/v1/webhooks/${id}/`, { url: 'http://hooks.example.com/plain' });
  assert.equal(plainOnly.status, 422, 'plain http refused by dispatch-svc, with its reason');
  assert.match(String((plainOnly.body.url as string[])[0]), /must use https/);

  assert.deepEqual(
    (await auditRows(alpha, id)).map((row) => [row.action, row.detail]),
    [
      [
        'webhook.create',
        {
          url: 'https://hooks.example.com/before',
          event_types: ['message.sent', 'message.deferred', 'message.failed', 'message.bounced', 'message.complained', 'message.unsubscribed'],
        },
      ],
      ['webhook.update', { url: 'https://hooks.example.com/after', event_types: ['message.bounced'] }],
      ['webhook.update', { enabled: false }],
      ['webhook.update', { enabled: true }],
    ],
  );
});

test('a rotation shows the new secret once; the old one signs beside it for 24 hours; no secret is audited', async () => {
  const key = await manager(alpha);
  const created = await call(key, 'POST', '/api/v1/webhooks/', { url: 'https://hooks.example.com/rotating' });
  const id = created.body.id as number;
  const rotated = await call(key, 'POST', `/api/v1/webhooks/${id}/rotate-secret`);
  assert.equal(rotated.status, 200, rotated.text);
  assert.match(String(rotated.body.secret), /^whsec_/);
  assert.notEqual(rotated.body.secret, created.body.secret);
  const expires = Date.parse(String(rotated.body.previous_secret_expires_at)) - Date.now();
  assert.ok(expires > 23.9 * 3_600_000 && expires <= 24 * 3_600_000, String(rotated.body.previous_secret_expires_at));
  assert.equal('secret' in (await call(key, 'GET', `/api/v1/webhooks/${id}/`)).body, false);
  const audit = await auditRows(alpha, id);
  assert.deepEqual(
    audit.map((row) => row.action),
    ['webhook.create', 'webhook.rotate_secret'],
  );
  assert.deepEqual(audit[1]?.detail, { previous_secret_expires_at: rotated.body.previous_secret_expires_at });
  const everything = JSON.stringify(audit);
  for (const secret of [created.body.secret, rotated.body.secret]) assert.equal(everything.includes(String(secret).slice('whsec_'.length)), false);
});

test('a test event is queued, attempted by webhook-svc and logged; the endpoint shows its last delivery and last error', async () => {
  const key = await manager(alpha);
  const id = (await call(key, 'POST', '/api/v1/webhooks/', { url: refusedUrl, event_types: ['message.sent'] })).body.id as number;
  const tested = await call(key, 'POST', `/api/v1/webhooks/${id}/test/`);
  assert.equal(tested.status, 202, tested.text);
  assert.equal(tested.body.type, 'webhook.test');
  const second = await call(key, 'POST', `/api/v1/webhooks/${id}/test`);
  const logged = await waitFor(
    async () => {
      const page = await call(key, 'GET', `/api/v1/webhooks/${id}/attempts/`);
      const attempts = page.body.results as Array<Record<string, unknown>>;
      return attempts.length >= 2 ? attempts : undefined;
    },
    { timeoutMs: 20_000, what: 'both test events attempted' },
  );
  assert.deepEqual(new Set(logged.map((attempt) => attempt.event_id)), new Set([tested.body.event_id, second.body.event_id]));
  for (const attempt of logged) {
    assert.deepEqual([attempt.event_type, attempt.message_id, attempt.status_code, attempt.attempt], ['webhook.test', null, null, 1]);
    assert.match(String(attempt.error), /private, loopback, link-local or metadata address/);
  }
  const first = await call(key, 'GET', `/api/v1/webhooks/${id}/attempts?limit=1`);
  assert.equal((first.body.results as unknown[]).length, 1);
  assert.equal(typeof first.body.next, 'string');
  const rest = await call(key, 'GET', `/api/v1/webhooks/${id}/attempts/?limit=1&cursor=${first.body.next}`);
  assert.notDeepEqual(rest.body.results, first.body.results);
  const badQuery = await call(key, 'GET', `/api/v1/webhooks/${id}/attempts/?limit=0&cursor=x&other=1`);
  assert.equal(badQuery.status, 422);
  assert.deepEqual(Object.keys(badQuery.body).sort(), ['cursor', 'limit', 'other']);

  const shown = await call(key, 'GET', `/api/v1/webhooks/${id}/`);
  const lastDelivery = shown.body.last_delivery as Record<string, unknown>;
  const lastError = shown.body.last_error as Record<string, unknown>;
  assert.deepEqual([lastDelivery.status_code, lastDelivery.succeeded], [null, false]);
  assert.equal(lastError.attempted_at, lastDelivery.attempted_at);
  assert.match(String(lastError.error), /private, loopback, link-local or metadata address/);
  assert.deepEqual(
    (await auditRows(alpha, id)).map((row) => [row.action, row.detail]),
    [
      ['webhook.create', { url: refusedUrl, event_types: ['message.sent'] }],
      ['webhook.test', { event_id: Number(String(tested.body.event_id).slice(4)) }],
      ['webhook.test', { event_id: Number(String(second.body.event_id).slice(4)) }],
    ],
  );
});

test('a deleted endpoint is gone with its attempts and test events; deleting again is 404', async () => {
  const key = await manager(alpha);
  const id = (await call(key, 'POST', '/api/v1/webhooks/', { url: refusedUrl })).body.id as number;
  await call(key, 'POST', `/api/v1/webhooks/${id}/test`);
  await waitFor(async () => ((await call(key, 'GET', `/api/v1/webhooks/${id}/attempts/`)).body.results as unknown[]).length > 0 || undefined, {
    timeoutMs: 20_000,
    what: 'the test event attempted',
  });
  const deleted = await call(key, 'DELETE', `/api/v1/webhooks/${id}/`);
  assert.equal(deleted.status, 200, deleted.text);
  assert.equal(deleted.body.id, id);
  assert.notEqual(deleted.body.last_delivery, null, 'answered as it was');
  assertCoded(await call(key, 'GET', `/api/v1/webhooks/${id}/`), 404, 'webhook_not_found');
  assertCoded(await call(key, 'DELETE', `/api/v1/webhooks/${id}`), 404, 'webhook_not_found');
  const { rows } = await system.db.query<{ events: number }>(
    "SELECT count(*)::int AS events FROM webhook_events WHERE project_id = $1 AND type = 'webhook.test' AND payload->'data'->>'endpoint_id' = $2",
    [alpha.projectId, String(id)],
  );
  assert.equal(rows[0]?.events, 0);
  const audit = await auditRows(alpha, id);
  assert.deepEqual(
    audit.map((row) => row.action),
    ['webhook.create', 'webhook.test', 'webhook.delete'],
  );
  assert.deepEqual(audit[2]?.detail, { url: refusedUrl });
});

test("another project's endpoint is 404 exactly like a missing one, both ways, and is left as it was", async () => {
  const alphaKey = await manager(alpha);
  const betaKey = await manager(beta);
  const alphaId = (await call(alphaKey, 'POST', '/api/v1/webhooks/', { url: 'https://hooks.example.com/alpha' })).body.id as number;
  const betaId = (await call(betaKey, 'POST', '/api/v1/webhooks/', { url: 'https://hooks.example.com/beta' })).body.id as number;
  for (const [caller, foreign] of [
    [alphaKey, betaId],
    [betaKey, alphaId],
  ] as const) {
    const listed = (await call(caller, 'GET', '/api/v1/webhooks/')).body.results as Array<{ id: number }>;
    assert.equal(
      listed.some((endpoint) => endpoint.id === foreign),
      false,
    );
    for (const id of [foreign, 999_999_999]) {
      for (const [method, path, body] of [
        ['GET', `/api/v1/webhooks/${id}/`],
        ['PATCH', `/api/v1/webhooks/${id}/`, { enabled: false, url: 'https://attacker.example.com/' }],
        ['DELETE', `/api/v1/webhooks/${id}/`],
        ['POST', `/api/v1/webhooks/${id}/rotate-secret`],
        ['POST', `/api/v1/webhooks/${id}/test`],
        ['GET', `/api/v1/webhooks/${id}/attempts/`],
      ] as const) {
        const refused = await call(caller, method, path, body);
        assertCoded(refused, 404, 'webhook_not_found');
      }
    }
  }
  const { rows } = await system.db.query<{ url: string; enabled: boolean; rotated: boolean }>(
    'SELECT url, enabled, previous_secret_expires_at IS NOT NULL AS rotated FROM webhook_endpoints WHERE id = ANY ($1::bigint[]) ORDER BY id',
    [[alphaId, betaId]],
  );
  assert.deepEqual(rows, [
    { url: 'https://hooks.example.com/alpha', enabled: true, rotated: false },
    { url: 'https://hooks.example.com/beta', enabled: true, rotated: false },
  ]);
  for (const path of ['/api/v1/webhooks/abc/', '/api/v1/webhooks/0/', '/api/v1/webhooks/99999999999999999999/']) {
    assertCoded(await call(alphaKey, 'GET', path), 404, 'webhook_not_found');
  }
});

test('webhooks:write is needed for every route, reads included; the per-project limit is 409', async () => {
  assertCoded(await call(alpha, 'GET', '/api/v1/webhooks/'), 403, 'insufficient_scope');
  assertCoded(await call(alpha, 'POST', '/api/v1/webhooks/', { url: 'https://hooks.example.com/' }), 403, 'insufficient_scope');
  const gamma = await system.createTenant('webhooks-api-gamma');
  const key = await manager(gamma);
  for (let index = 0; index < 20; index += 1) {
    assert.equal((await call(key, 'POST', '/api/v1/webhooks/', { url: `https://hooks.example.com/${index}` })).status, 201);
  }
  assertCoded(await call(key, 'POST', '/api/v1/webhooks/', { url: 'https://hooks.example.com/one-more' }), 409, 'webhook_limit_reached');
});
