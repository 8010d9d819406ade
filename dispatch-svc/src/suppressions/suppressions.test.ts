// The suppression list against a real database: kept by SuppressionAdminService, honoured by Send in its transaction.
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { after, before, describe, test } from 'node:test';
import { status } from '@grpc/grpc-js';
import { GrpcClient } from '@notify/platform';
import { withTransaction } from '@notify/platform/database';
import { createDataKey } from '@notify/platform/mail';
import { type dispatch, dispatchProto } from '@notify/proto';
import { assertRefused } from '@notify/test/harness/refusal.ts';
import { applyDeliveryEvent } from '../events/event-store.ts';
import { type Harness, startHarness } from '../testing/harness.ts';
import { addManualSuppressions, erasedAddress } from './suppression-store.ts';

let h: Harness;
let suppressions: GrpcClient<typeof dispatchProto.SuppressionAdminService.service>;

before(async () => {
  h = await startHarness();
  suppressions = new GrpcClient(dispatchProto.SuppressionAdminService.service, h.address, { token: h.callers.admin.token, deadlineMs: 5_000 });
  await h.admin.call('PutTemplate', { projectId: h.ids.projectId, slug: 'welcome', subject: 'Hi', text: 'Hi', active: true });
});

after(async () => {
  suppressions?.close();
  await h?.close();
});

const send = (to: string, projectId = h.ids.projectId): Promise<dispatch.SendResponse__Output> =>
  h.dispatch.call('Send', {
    projectId,
    organizationId: h.ids.organizationId,
    apiKeyId: h.ids.apiKeyId,
    template: 'welcome',
    to,
    dataJson: '{}',
    idempotencyKey: '',
    fingerprint: '',
  });

const count = async (sql: string, values: unknown[]): Promise<number> => (await h.pool.query<{ count: number }>(sql, values)).rows[0]?.count ?? -1;
const messagesTo = (to: string): Promise<number> => count('SELECT count(*)::int AS count FROM messages WHERE recipient = $1', [to]);
const usage = (): Promise<number> =>
  count(
    `SELECT coalesce(sum(accepted), 0)::int AS count FROM organization_usage WHERE organization_id = $1 AND month = date_trunc('month', now() AT TIME ZONE 'UTC')::date`,
    [h.ids.organizationId],
  );

describe('a send to a suppressed address', () => {
  test('is refused on `to` with the reason and date, creates nothing and uses no quota; the domain compares in any case', async () => {
    const added = await suppressions.call('AddSuppression', { projectId: h.ids.projectId, address: 'Gone@Example.COM', reason: '' });
    assert.deepEqual(
      { ...added, createdAt: undefined },
      { projectId: h.ids.projectId, address: 'Gone@example.com', reason: 'manual', messageId: 0, createdAt: undefined },
    );
    const usageBefore = await usage();
    const refused = await assertRefused(send('Gone@example.com'), status.FAILED_PRECONDITION, 'recipient_suppressed');
    assert.deepEqual(refused.fields, ['manual', added.createdAt.slice(0, 10)]);
    await assertRefused(send('Gone@EXAMPLE.com'), status.FAILED_PRECONDITION, 'recipient_suppressed');
    assert.equal(await messagesTo('Gone@example.com'), 0);
    assert.equal(await usage(), usageBefore, 'no quota used');
  });

  test('is accepted when only the local part differs in case, or in another project', async () => {
    await suppressions.call('AddSuppression', { projectId: h.ids.projectId, address: 'ana@example.com', reason: 'complaint' });
    assert.ok((await send('Ana@example.com')).messageId > 0, 'the local part is compared as given');
    assert.ok(
      (await h.dispatch
        .call('Send', {
          projectId: h.ids.otherProjectId,
          organizationId: h.ids.organizationId,
          apiKeyId: h.ids.apiKeyId,
          template: 'welcome',
          to: 'ana@example.com',
          dataJson: '{}',
          idempotencyKey: '',
          fingerprint: '',
        })
        .catch((error: { reason?: string }) => error.reason)) !== 'recipient_suppressed',
    );
  });

  test('is accepted again once the address is removed; removing it twice is NOT_FOUND', async () => {
    await suppressions.call('AddSuppression', { projectId: h.ids.projectId, address: 'back@example.com', reason: 'hard_bounce' });
    await assertRefused(send('back@example.com'), status.FAILED_PRECONDITION, 'recipient_suppressed');
    await suppressions.call('RemoveSuppression', { projectId: h.ids.projectId, address: 'back@example.com' });
    assert.ok((await send('back@example.com')).messageId > 0);
    await assertRefused(
      suppressions.call('RemoveSuppression', { projectId: h.ids.projectId, address: 'back@example.com' }),
      status.NOT_FOUND,
      'suppression_not_found',
    );
  });

  test('in a batch of concurrent sends, only the suppressed one is refused', async () => {
    await suppressions.call('AddSuppression', { projectId: h.ids.projectId, address: 'blocked@example.com', reason: 'manual' });
    const results = await Promise.allSettled(['one@example.com', 'blocked@example.com', 'two@example.com'].map((to) => send(to)));
    assert.deepEqual(
      results.map((result) => (result.status === 'fulfilled' ? 'accepted' : (result.reason as { reason: string }).reason)),
      ['accepted', 'recipient_suppressed', 'accepted'],
    );
  });
});

describe('the list', () => {
  test('keeps the first entry of an address added twice, lists newest first and searches addresses', async () => {
    const first = await suppressions.call('AddSuppression', { projectId: h.ids.projectId, address: 'twice@example.org', reason: 'complaint' });
    const second = await suppressions.call('AddSuppression', { projectId: h.ids.projectId, address: 'twice@EXAMPLE.org', reason: 'manual' });
    assert.deepEqual(second, first);
    const found = await suppressions.call('ListSuppressions', { projectId: h.ids.projectId, search: 'EXAMPLE.ORG', limit: 0 });
    assert.deepEqual(
      found.suppressions.map((entry) => [entry.address, entry.reason]),
      [['twice@example.org', 'complaint']],
    );
    const all = await suppressions.call('ListSuppressions', { projectId: h.ids.projectId, search: '', limit: 2 });
    assert.equal(all.suppressions.length, 2);
    assert.ok(all.suppressions[0] && all.suppressions[1] && all.suppressions[0].createdAt >= all.suppressions[1].createdAt, 'newest first');
  });

  test('adds many by hand in one statement: each new one added once, one listed in clear or as an erasure kept', async () => {
    const dataKey = createDataKey(randomBytes(32));
    const erased = erasedAddress(dataKey, h.ids.projectId, 'gone@many.example');
    await h.pool.query("INSERT INTO suppressions (project_id, address, reason) VALUES ($1, $2, 'complaint')", [h.ids.projectId, erased]);
    const entries = await withTransaction(h.pool, (client) =>
      addManualSuppressions(client, dataKey, h.ids.projectId, ['new@many.example', 'gone@MANY.example', 'new@MANY.example']),
    );
    assert.deepEqual(
      entries.map((entry) => [entry.address, entry.reason, entry.added]),
      [
        ['new@many.example', 'manual', true],
        [erased, 'complaint', false],
        ['new@many.example', 'manual', false],
      ],
    );
    assert.equal(await count("SELECT count(*)::int AS count FROM suppressions WHERE address = 'new@many.example'", []), 1);
  });

  test('refuses bad arguments, naming each', async () => {
    const refused = await assertRefused(
      suppressions.call('AddSuppression', { projectId: 0, address: 'a@b, c@d', reason: 'spam' }),
      status.INVALID_ARGUMENT,
      'invalid_argument',
    );
    assert.equal(refused.fields.length, 3);
    await assertRefused(
      suppressions.call('AddSuppression', { projectId: 999_999, address: 'a@example.com', reason: '' }),
      status.NOT_FOUND,
      'project_not_found',
    );
    await assertRefused(
      suppressions.call('ListSuppressions', { projectId: h.ids.projectId, search: '', limit: 501 }),
      status.INVALID_ARGUMENT,
      'invalid_argument',
    );
  });

  test('needs the admin token', async () => {
    const gateway = new GrpcClient(dispatchProto.SuppressionAdminService.service, h.address, { token: h.callers.gateway.token, deadlineMs: 5_000 });
    try {
      await assertRefused(
        gateway.call('ListSuppressions', { projectId: h.ids.projectId, search: '', limit: 0 }),
        status.PERMISSION_DENIED,
        'permission_denied',
      );
    } finally {
      gateway.close();
    }
  });
});

describe('the panel calls', () => {
  test("answer within the organization, and treat another organization's project as not found", async () => {
    const panel = new GrpcClient(dispatchProto.PanelService.service, h.address, { token: h.callers.gateway.token, deadlineMs: 5_000 });
    try {
      await suppressions.call('AddSuppression', { projectId: h.ids.projectId, address: 'panel@example.com', reason: '' });
      const scope = { organizationId: h.ids.organizationId, projectId: h.ids.projectId };
      const found = await panel.call('ListProjectSuppressions', { ...scope, search: 'panel@' });
      assert.deepEqual(
        found.suppressions.map((entry) => entry.address),
        ['panel@example.com'],
      );
      const stranger = { organizationId: h.ids.organizationId + 1_000, projectId: h.ids.projectId };
      await assertRefused(panel.call('ListProjectSuppressions', { ...stranger, search: '' }), status.NOT_FOUND, 'project_not_found');
      await assertRefused(panel.call('RemoveProjectSuppression', { ...stranger, address: 'panel@example.com' }), status.NOT_FOUND, 'project_not_found');
      await panel.call('RemoveProjectSuppression', { ...scope, address: 'panel@example.com' });
      await assertRefused(panel.call('RemoveProjectSuppression', { ...scope, address: 'panel@example.com' }), status.NOT_FOUND, 'suppression_not_found');
    } finally {
      panel.close();
    }
  });
});

describe('a hard bounce', () => {
  test("suppresses the recipient (domain in lower case) with the message that bounced, in the event's transaction", async () => {
    const bounced = (await send('Nobody@Example.NET')).messageId;
    const failed = {
      messageId: bounced,
      state: 'failed' as const,
      attempt: 1,
      occurredAt: new Date().toISOString(),
      smtpCode: 550,
      smtpResponse: '550 5.1.1 No such user',
    };
    assert.equal(await applyDeliveryEvent(h.pool, { ...failed, suppression: 'hard_bounce' }), 'applied');
    const listed = await suppressions.call('ListSuppressions', { projectId: h.ids.projectId, search: 'nobody@', limit: 0 });
    assert.deepEqual(
      listed.suppressions.map((entry) => [entry.address, entry.reason, entry.messageId]),
      [['Nobody@example.net', 'hard_bounce', bounced]],
    );
    await assertRefused(send('Nobody@example.net'), status.FAILED_PRECONDITION, 'recipient_suppressed');

    const other = (await send('policy@example.net')).messageId;
    assert.equal(await applyDeliveryEvent(h.pool, { ...failed, messageId: other, smtpResponse: '550 5.7.1 Rejected' }), 'applied');
    assert.equal(
      (await suppressions.call('ListSuppressions', { projectId: h.ids.projectId, search: 'policy@', limit: 0 })).suppressions.length,
      0,
      'a failure that is no hard bounce suppresses nothing',
    );
  });
});
