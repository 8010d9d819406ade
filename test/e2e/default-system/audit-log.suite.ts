// The audit log against the running system (issue 53, item 7): every change made through the management API is
// recorded with the key that made it, in the change's transaction, and operators read it with `notifyctl audit list`,
// newest first, a page at a time; one organization's entries never appear in another's listing, and a refused change
// records nothing.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import type { HttpResult, System, Tenant } from '../../harness/system.ts';
import { startTenantPair } from '../../harness/tenant-pair.ts';
import { anotherKey } from '../../harness/tenants.ts';

let system: System;
let alpha: Tenant;
let beta: Tenant;

before(async () => {
  ({ system, alpha, beta } = await startTenantPair('audit'));
});

after(async () => {
  await system?.stop();
});

interface ListedEvent {
  id: number;
  projectId: number;
  apiKeyId: number;
  action: string;
  target: string;
  detailJson: string;
}

const call = (caller: Tenant, method: string, path: string, body?: unknown): Promise<HttpResult> =>
  system.request(path, {
    method,
    headers: { authorization: `Api-Key ${caller.apiKey}`, 'x-organization-id': String(caller.organizationId), 'content-type': 'application/json' },
    body: body === undefined ? undefined : JSON.stringify(body),
  });

async function auditOf(organizationId: number, ...flags: string[]): Promise<{ events: ListedEvent[]; nextBeforeId: number }> {
  return JSON.parse(await system.notifyctlOk('audit', 'list', '--organization', String(organizationId), ...flags, '--json'));
}

test('suppression and key changes are listed newest first with the key that made them; a refused change records nothing', async () => {
  const manager = await anotherKey(system, alpha, 'audited', ['full']);
  assert.equal((await call(manager, 'POST', '/api/v1/suppressions/', { addresses: ['one@audit.example', 'two@audit.example'] })).status, 200);
  assert.equal((await call(manager, 'POST', '/api/v1/suppressions/', { addresses: ['one@audit.example'] })).status, 200, 'nothing added');
  assert.equal((await call(manager, 'DELETE', `/api/v1/suppressions/${encodeURIComponent('one@audit.example')}/`)).status, 200);
  const created = await call(manager, 'POST', '/api/v1/api-keys/', { name: 'ci', scopes: ['send'] });
  assert.equal(created.status, 201, created.text);
  const keyId = Number(created.body.id);
  assert.equal((await call(manager, 'DELETE', `/api/v1/api-keys/${keyId}/`)).status, 200);
  assert.equal((await call(alpha, 'POST', '/api/v1/suppressions/', { addresses: ['refused@audit.example'] })).status, 403);
  assert.equal((await call(manager, 'POST', '/api/v1/suppressions/', { addresses: ['not an address'] })).status, 422);

  const { events } = await auditOf(alpha.organizationId);
  assert.deepEqual(
    events.map((event) => [event.action, event.target, event.apiKeyId, event.projectId]),
    [
      ['api_key.revoke', String(keyId), manager.keyId, alpha.projectId],
      ['api_key.create', String(keyId), manager.keyId, alpha.projectId],
      ['suppression.remove', 'one@audit.example', manager.keyId, alpha.projectId],
      ['suppression.add', '2 addresses', manager.keyId, alpha.projectId],
    ],
  );
  assert.deepEqual(JSON.parse(events[3]?.detailJson ?? ''), { addresses: ['one@audit.example', 'two@audit.example'] });
  assert.deepEqual(JSON.parse(events[1]?.detailJson ?? ''), { name: 'ci', scopes: ['send'], test: false, from_domains: [] });
  assert.doesNotMatch(JSON.stringify(events), new RegExp(String(created.body.key).split('.')[1] ?? ''), 'never the secret');
});

test("pages with --before, and one organization's entries never appear in another's listing", async () => {
  const manager = await anotherKey(system, beta, 'audited', ['suppressions:write']);
  for (const address of ['a@pages.example', 'b@pages.example', 'c@pages.example'])
    assert.equal((await call(manager, 'POST', '/api/v1/suppressions/', { addresses: [address] })).status, 200);
  const first = await auditOf(beta.organizationId, '--limit', '2');
  assert.deepEqual(
    first.events.map((event) => event.target),
    ['c@pages.example', 'b@pages.example'],
  );
  const second = await auditOf(beta.organizationId, '--limit', '2', '--before', String(first.nextBeforeId));
  assert.deepEqual(
    second.events.map((event) => event.target),
    ['a@pages.example'],
  );
  assert.equal(second.nextBeforeId, 0, 'the last page');
  const alphaTargets = (await auditOf(alpha.organizationId)).events.map((event) => event.target);
  assert.ok(!alphaTargets.some((target) => target.endsWith('@pages.example')), "beta's changes are not alpha's");
  assert.deepEqual((await auditOf(beta.organizationId, '--project', String(alpha.projectId))).events, [], "alpha's project is not beta's");
});
