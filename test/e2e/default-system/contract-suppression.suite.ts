// docs/contract.md, "Recipients that must not be mailed", against the running services: an address put on a project's
// suppression list with notifyctl is refused 422 on `to` (en/es) with its reason and date, the refusal creates nothing
// and uses no quota, the list is the project's alone, and removing the address lets sends through again.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { assertAccepted, assertFieldErrors, writtenRows } from '../../harness/contract-shapes.ts';
import { type System, startSystem, type Tenant } from '../../harness/system.ts';
import { validBody } from '../../harness/tenants.ts';
import { assertTranslated, languageHeader } from '../../harness/translation.ts';

let system: System;
let tenant: Tenant;
let neighbour: Tenant;

before(async () => {
  system = await startSystem();
  tenant = await system.createTenant('suppression');
  neighbour = await system.createTenant('suppression-neighbour');
  for (const each of [tenant, neighbour]) await system.putTemplate(each.projectId, 'welcome');
});

after(async () => {
  await system?.stop();
});

const notifyctl = (...args: string[]): Promise<string> => system.notifyctlOk(...args);

const usage = async (organizationId: number): Promise<number> =>
  (
    await system.db.query<{ accepted: number }>('SELECT coalesce(sum(accepted), 0)::int AS accepted FROM organization_usage WHERE organization_id = $1', [
      organizationId,
    ])
  ).rows[0]?.accepted ?? -1;

test('a suppressed address is 422 on `to` with its reason and date, in English and Spanish, and changes nothing', async () => {
  const added = JSON.parse(await notifyctl('suppression', 'add', '--project', String(tenant.projectId), '--address', 'gone@Example.com', '--json')) as {
    address: string;
    reason: string;
    createdAt: string;
  };
  assert.deepEqual([added.address, added.reason], ['gone@example.com', 'manual']);
  const since = added.createdAt.slice(0, 10);

  const rowsBefore = await writtenRows(system.db);
  const usageBefore = await usage(tenant.organizationId);
  const { en, es } = await assertTranslated('suppressed recipient', (acceptLanguage) =>
    system.send(tenant, validBody('welcome', { to: 'gone@EXAMPLE.com' }), languageHeader(acceptLanguage)),
  );
  assertFieldErrors(en, ['to']);
  assert.deepEqual(en.body, { to: [`This address is suppressed (manual, since ${since}).`] });
  assert.deepEqual(es.body, { to: [`Esta dirección está suprimida (manual, desde ${since}).`] });
  assert.deepEqual(await writtenRows(system.db), rowsBefore, 'no message, no idempotency record');
  assert.equal(await usage(tenant.organizationId), usageBefore, 'no quota used');

  // Another project's list is its own.
  assertAccepted(await system.send(neighbour, validBody('welcome', { to: 'gone@example.com' })));
});

test('notifyctl lists and removes entries; a removed address is accepted again', async () => {
  await notifyctl('suppression', 'add', '--project', String(tenant.projectId), '--address', 'later@example.com');
  const listed = JSON.parse(await notifyctl('suppression', 'list', '--project', String(tenant.projectId), '--address', 'later', '--json')) as {
    suppressions: { address: string; reason: string }[];
  };
  assert.deepEqual(
    listed.suppressions.map((entry) => [entry.address, entry.reason]),
    [['later@example.com', 'manual']],
  );
  assert.equal((await system.send(tenant, validBody('welcome', { to: 'later@example.com' }))).status, 422);

  await notifyctl('suppression', 'remove', '--project', String(tenant.projectId), '--address', 'later@example.com');
  assertAccepted(await system.send(tenant, validBody('welcome', { to: 'later@example.com' })));
  const removedAgain = await system.notifyctl('suppression', 'remove', '--project', String(tenant.projectId), '--address', 'later@example.com');
  assert.notEqual(removedAgain.code, 0, 'an address not on the list cannot be removed');
});
