// The suppression list over the public API against the running system (issue 53, item 3): a key with the scopes lists
// its project's entries by reason and address in keyset pages that neither skip nor repeat, adds up to 1,000 at once
// (a listed address keeps its entry, and a send to it is refused), and removes one; an entry made by a hard bounce or
// a complaint needs suppressions:reactivate too. Another project's entries are never seen nor touched, both ways;
// every answer matches the OpenAPI document.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { assertCoded } from '../../harness/contract-shapes.ts';
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
  ({ system, alpha, beta, checkResponse } = await startTenantPair('suppressions', { welcome: true }));
});

after(async () => {
  await system?.stop();
});

/** A call of the suppression routes as `caller`, checked against the OpenAPI document. */
const call = (caller: Tenant, method: string, path: string, body?: unknown): Promise<HttpResult> =>
  documentedCall(system, checkResponse, caller, {
    method,
    path,
    documented: path
      .replace(/\?.*$/, '')
      .replace(/^\/api\/v1\/suppressions\/[^/]+\/$/, '/api/v1/suppressions/{address}')
      .replace(/\/$/, ''),
    body,
  });

const manager = (tenant: Tenant, scopes = ['suppressions:read', 'suppressions:write', 'send']): Promise<Tenant> =>
  anotherKey(system, tenant, `suppressions ${scopes.join(' ')}`, scopes);

test('addresses added at once are listed, a listed one keeps its entry, and a send to one is refused', async () => {
  const key = await manager(alpha);
  const added = await call(key, 'POST', '/api/v1/suppressions/', { addresses: ['one@example.com', 'Two@Example.COM'] });
  assert.equal(added.status, 200, added.text);
  const results = added.body.results as Array<Record<string, unknown>>;
  assert.deepEqual(
    results.map((entry) => [entry.address, entry.reason, entry.added, entry.message_id]),
    [
      ['one@example.com', 'manual', true, null],
      ['Two@example.com', 'manual', true, null],
    ],
  );
  const again = await call(key, 'POST', '/api/v1/suppressions/', { addresses: ['one@EXAMPLE.com'] });
  assert.deepEqual(
    (again.body.results as Array<Record<string, unknown>>).map((entry) => [entry.added, entry.created_at]),
    [[false, results[0]?.created_at]],
  );
  const send = await system.send(key, validBody('welcome', { to: 'one@example.com' }));
  assert.equal(send.status, 422, send.text);
  assert.ok('to' in send.body);
});

test('the list pages newest first without skipping or repeating, filtered by reason and address', async () => {
  const key = await manager(alpha);
  const addresses = Array.from({ length: 7 }, (_, index) => `page-${index}@paging.example`);
  assert.equal((await call(key, 'POST', '/api/v1/suppressions/', { addresses })).status, 200);
  await system.db.query("INSERT INTO suppressions (project_id, address, reason) VALUES ($1, 'bounced@paging.example', 'hard_bounce')", [alpha.projectId]);
  const seen: string[] = [];
  let cursor: string | null = '';
  for (let pages = 0; cursor !== null && pages < 10; pages += 1) {
    const page = await call(key, 'GET', `/api/v1/suppressions/?limit=3${cursor ? `&cursor=${cursor}` : ''}`);
    assert.equal(page.status, 200, page.text);
    seen.push(...(page.body.results as Array<{ address: string }>).map((entry) => entry.address));
    cursor = page.body.next as string | null;
  }
  assert.equal(new Set(seen).size, seen.length, 'no entry twice');
  for (const address of [...addresses, 'bounced@paging.example']) assert.ok(seen.includes(address), `${address} listed`);
  assert.equal(seen[0], 'bounced@paging.example', 'newest first');
  const bounced = await call(key, 'GET', '/api/v1/suppressions/?reason=hard_bounce');
  assert.deepEqual(
    (bounced.body.results as Array<{ address: string }>).map((entry) => entry.address),
    ['bounced@paging.example'],
  );
  const one = await call(key, 'GET', '/api/v1/suppressions/?address=page-3%40PAGING.example');
  assert.deepEqual(
    (one.body.results as Array<{ address: string }>).map((entry) => entry.address),
    ['page-3@paging.example'],
  );
  const refused = await call(key, 'GET', '/api/v1/suppressions/?reason=bounced&limit=0&cursor=nope&extra=1');
  assert.equal(refused.status, 422);
  assert.deepEqual(Object.keys(refused.body).sort(), ['extra', 'limit', 'reason']);
  const badCursor = await call(key, 'GET', '/api/v1/suppressions/?cursor=bm9wZQ');
  assert.deepEqual(Object.keys(badCursor.body), ['cursor']);
});

test('removing an entry mails the address again; a hard bounce or a complaint needs suppressions:reactivate', async () => {
  const key = await manager(alpha);
  await call(key, 'POST', '/api/v1/suppressions/', { addresses: ['back@remove.example'] });
  const removed = await call(key, 'DELETE', `/api/v1/suppressions/${encodeURIComponent('back@remove.example')}/`);
  assert.equal(removed.status, 200, removed.text);
  assert.equal(removed.body.reason, 'manual');
  assert.equal((await system.send(key, validBody('welcome', { to: 'back@remove.example' }))).status, 202);
  assertCoded(await call(key, 'DELETE', `/api/v1/suppressions/${encodeURIComponent('back@remove.example')}/`), 404, 'suppression_not_found');

  await system.db.query("INSERT INTO suppressions (project_id, address, reason) VALUES ($1, 'complainer@remove.example', 'complaint')", [alpha.projectId]);
  const path = `/api/v1/suppressions/${encodeURIComponent('complainer@remove.example')}/`;
  const refused = await call(key, 'DELETE', path);
  assertCoded(refused, 403, 'insufficient_scope');
  assert.match(String(refused.body.detail), /suppressions:reactivate/);
  const reactivator = await manager(alpha, ['suppressions:write', 'suppressions:reactivate']);
  assert.equal((await call(reactivator, 'DELETE', path)).status, 200);
});

test('scopes are required: a sending key may not read nor change the list', async () => {
  assertCoded(await call(alpha, 'GET', '/api/v1/suppressions/'), 403, 'insufficient_scope');
  assertCoded(await call(alpha, 'POST', '/api/v1/suppressions/', { addresses: ['x@scopes.example'] }), 403, 'insufficient_scope');
  const reader = await manager(alpha, ['suppressions:read']);
  assertCoded(await call(reader, 'POST', '/api/v1/suppressions/', { addresses: ['x@scopes.example'] }), 403, 'insufficient_scope');
});

test("another project's entries are never seen nor removed, both ways", async () => {
  const alphaKey = await manager(alpha);
  const betaKey = await manager(beta);
  await call(alphaKey, 'POST', '/api/v1/suppressions/', { addresses: ['alpha-only@tenancy.example'] });
  await call(betaKey, 'POST', '/api/v1/suppressions/', { addresses: ['beta-only@tenancy.example'] });
  for (const [caller, foreign] of [
    [alphaKey, 'beta-only@tenancy.example'],
    [betaKey, 'alpha-only@tenancy.example'],
  ] as const) {
    const listed = await call(caller, 'GET', `/api/v1/suppressions/?address=${encodeURIComponent(foreign)}`);
    assert.deepEqual(listed.body.results, []);
    assertCoded(await call(caller, 'DELETE', `/api/v1/suppressions/${encodeURIComponent(foreign)}/`), 404, 'suppression_not_found');
  }
  const { rows } = await system.db.query<{ count: number }>(
    "SELECT count(*)::int AS count FROM suppressions WHERE address IN ('alpha-only@tenancy.example', 'beta-only@tenancy.example')",
  );
  assert.equal(rows[0]?.count, 2, 'both entries are still there');
});

test('a batch is judged whole: every bad address named by its index, more than 1,000 refused, nothing written', async () => {
  const key = await manager(alpha);
  const refused = await call(key, 'POST', '/api/v1/suppressions/', {
    addresses: ['fine@batch.example', 'not an address', 'line\nbreak@batch.example'],
    extra: true,
  });
  assert.equal(refused.status, 422, refused.text);
  assert.deepEqual(Object.keys(refused.body).sort(), ['addresses[1]', 'addresses[2]', 'extra']);
  const tooMany = await call(key, 'POST', '/api/v1/suppressions/', { addresses: Array.from({ length: 1_001 }, (_, index) => `n${index}@batch.example`) });
  assert.equal(tooMany.status, 422);
  const { rows } = await system.db.query<{ count: number }>("SELECT count(*)::int AS count FROM suppressions WHERE address LIKE '%@batch.example'");
  assert.equal(rows[0]?.count, 0);
  const thousand = await call(key, 'POST', '/api/v1/suppressions/', { addresses: Array.from({ length: 1_000 }, (_, index) => `n${index}@batch.example`) });
  assert.equal(thousand.status, 200, thousand.text);
  assert.equal((thousand.body.results as unknown[]).length, 1_000);
});
