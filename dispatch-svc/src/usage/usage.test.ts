import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { after, before, test } from 'node:test';
import { status } from '@grpc/grpc-js';
import type { dispatch } from '@notify/proto';
import { assertRefused } from '@notify/test/harness/refusal.ts';
import { waitFor } from '@notify/test/harness/wait.ts';
import { type Harness, startHarness } from '../testing/harness.ts';

let h: Harness;
/** A fresh organization (with a project and key) per test, so counts start at 0. */
let tenant: { organizationId: number; projectId: number; apiKeyId: number };

before(async () => {
  h = await startHarness();
});

after(() => h.close());

async function newTenant(): Promise<typeof tenant> {
  const one = async (sql: string, values: unknown[]): Promise<number> => (await h.pool.query<{ id: number }>(`${sql} RETURNING id`, values)).rows[0]?.id ?? 0;
  const suffix = randomUUID();
  const planId = await one('INSERT INTO plans (name) VALUES ($1)', [`plan-${suffix}`]);
  const organizationId = await one('INSERT INTO organizations (name, plan_id) VALUES ($1, $2)', [`org-${suffix}`, planId]);
  const projectId = await one('INSERT INTO projects (organization_id, name) VALUES ($1, $2)', [organizationId, 'main']);
  const apiKeyId = await one('INSERT INTO api_keys (project_id, name, prefix, secret_hash) VALUES ($1, $2, $3, $4)', [
    projectId,
    'key',
    `p${suffix}`,
    Buffer.alloc(32),
  ]);
  await h.admin.call('PutTemplate', { projectId, slug: 'welcome', subject: 'Hi', html: '<p>Hi</p>', text: 'Hi', variablesSchemaJson: '', active: true });
  return { organizationId, projectId, apiKeyId };
}

function request(overrides: Partial<dispatch.SendRequest> = {}): dispatch.SendRequest {
  return { ...tenant, template: 'welcome', to: 'ada@example.com', dataJson: '{}', idempotencyKey: '', fingerprint: '', monthlyQuota: 0, ...overrides };
}

const usage = async (): Promise<number> => (await h.dispatch.call('GetUsage', { organizationId: tenant.organizationId })).accepted;
const messages = async (): Promise<number> =>
  (await h.pool.query<{ n: number }>('SELECT count(*)::int AS n FROM messages WHERE organization_id = $1', [tenant.organizationId])).rows[0]?.n ?? -1;

test('an organization with no message this month has used nothing, in the current UTC month', async () => {
  tenant = await newTenant();
  const answer = await h.dispatch.call('GetUsage', { organizationId: tenant.organizationId });
  assert.deepEqual(answer, { organizationId: tenant.organizationId, month: new Date().toISOString().slice(0, 7), accepted: 0 });
});

test('every accepted message counts, with or without a quota', async () => {
  tenant = await newTenant();
  await h.dispatch.call('Send', request());
  await h.dispatch.call('Send', request({ monthlyQuota: 5 }));
  assert.equal(await usage(), 2);
  const rows = await h.pool.query('SELECT month::text, accepted FROM organization_usage WHERE organization_id = $1', [tenant.organizationId]);
  assert.deepEqual(rows.rows, [{ month: `${new Date().toISOString().slice(0, 7)}-01`, accepted: 2 }]);
});

test('once the quota is used up a send is refused plan_blocked and leaves no trace', async () => {
  tenant = await newTenant();
  for (let i = 0; i < 2; i += 1) await h.dispatch.call('Send', request({ monthlyQuota: 2 }));
  const jobs = await h.jobsInStream();
  await assertRefused(h.dispatch.call('Send', request({ monthlyQuota: 2 })), status.FAILED_PRECONDITION, 'plan_blocked');
  assert.equal(await messages(), 2);
  assert.equal(await usage(), 2);
  assert.equal(await h.jobsInStream(), jobs);
  // The accepted sends' outbox rows are deleted after their answers (not awaited); a row of the refusal's would stay.
  await waitFor(async () => (await h.pool.query<{ n: number }>('SELECT count(*)::int AS n FROM outbox')).rows[0]?.n === 0, {
    timeoutMs: 5_000,
    what: 'an empty outbox',
  });
  // Raising the quota (or lifting it) lets the organization send again.
  await h.dispatch.call('Send', request({ monthlyQuota: 3 }));
  await h.dispatch.call('Send', request({ monthlyQuota: 0 }));
  assert.equal(await usage(), 4);
});

test('concurrent sends never pass the quota', async () => {
  tenant = await newTenant();
  const results = await Promise.allSettled(Array.from({ length: 30 }, () => h.dispatch.call('Send', request({ monthlyQuota: 7 }))));
  const accepted = results.filter((result) => result.status === 'fulfilled').length;
  assert.equal(accepted, 7);
  for (const result of results) {
    if (result.status === 'rejected') assert.equal((result.reason as { reason: string }).reason, 'plan_blocked');
  }
  assert.equal(await messages(), 7);
  assert.equal(await usage(), 7);
});

test('a replay uses no quota, even when the quota is used up since', async () => {
  tenant = await newTenant();
  const key = randomUUID();
  const first = await h.dispatch.call('Send', request({ monthlyQuota: 1, idempotencyKey: key, fingerprint: 'fp' }));
  const replay = await h.dispatch.call('Send', request({ monthlyQuota: 1, idempotencyKey: key, fingerprint: 'fp' }));
  assert.deepEqual(replay, { ...first, idempotentReplay: true, organizationAccepted: 0, replayableForMs: replay.replayableForMs });
  assert.equal(await usage(), 1);
  await assertRefused(h.dispatch.call('Send', request({ monthlyQuota: 1 })), status.FAILED_PRECONDITION, 'plan_blocked');
});

test('a refused send does not count', async () => {
  tenant = await newTenant();
  await assertRefused(h.dispatch.call('Send', request({ template: 'nope', monthlyQuota: 1 })), status.NOT_FOUND, 'template_not_found');
  assert.equal(await usage(), 0);
  await h.dispatch.call('Send', request({ monthlyQuota: 1 }));
  assert.equal(await usage(), 1);
});

test('a negative quota or organization id is INVALID_ARGUMENT', async () => {
  await assertRefused(h.dispatch.call('Send', request({ monthlyQuota: -1 })), status.INVALID_ARGUMENT, 'invalid_argument');
  await assertRefused(h.dispatch.call('GetUsage', { organizationId: 0 }), status.INVALID_ARGUMENT, 'invalid_argument');
});
