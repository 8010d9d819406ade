// A send's From (docs/contract.md, "Sending from your own domains"): a key's domain limit, then a verified domain of
// the organization; the From kept with the message and carried by its job.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { status } from '@grpc/grpc-js';
import type { dispatch } from '@notify/proto';
import { assertRefused } from '@notify/test/harness/refusal.ts';
import { type Harness, startHarness } from '../testing/harness.ts';

let h: Harness;
let otherOrganizationId: number;

async function addDomain(organizationId: number, domain: string, dkimStatus: 'pending' | 'verified' | 'failed'): Promise<void> {
  await h.pool.query(
    `INSERT INTO sending_domains (organization_id, domain, selector, public_key, sealed_private_key, dkim_status)
     VALUES ($1, $2, 'notify', 'public', 'sealed', $3)`,
    [organizationId, domain, dkimStatus],
  );
}

before(async () => {
  h = await startHarness();
  await h.admin.call('PutTemplate', {
    projectId: h.ids.projectId,
    slug: 'welcome',
    subject: 'Hi',
    html: '<p>Hi</p>',
    text: 'Hi',
    variablesSchemaJson: '',
    active: true,
  });
  const plan = await h.pool.query<{ plan_id: number }>('SELECT plan_id FROM organizations WHERE id = $1', [h.ids.organizationId]);
  const other = await h.pool.query<{ id: number }>('INSERT INTO organizations (name, plan_id) VALUES ($1, $2) RETURNING id', [
    'Other Org',
    plan.rows[0]?.plan_id,
  ]);
  otherOrganizationId = other.rows[0]?.id as number;
  await addDomain(h.ids.organizationId, 'mail.acme.example', 'verified');
  await addDomain(h.ids.organizationId, 'news.acme.example', 'verified');
  await addDomain(h.ids.organizationId, 'pending.acme.example', 'pending');
  await addDomain(otherOrganizationId, 'rival.example', 'verified');
});

after(() => h.close());

const send = (overrides: Partial<dispatch.SendRequest>) => h.dispatch.call('Send', h.sendRequest(overrides));
const messages = async (): Promise<number> => (await h.pool.query<{ n: number }>('SELECT count(*)::int AS n FROM messages')).rows[0]?.n ?? -1;

describe('a send that names its From', () => {
  test('on a verified domain of the organization: kept with the message and carried by its job', async () => {
    const response = await send({ fromAddress: 'billing@Mail.Acme.example', fromName: 'Acme, Billing' });
    const row = (await h.pool.query('SELECT from_address, from_name FROM messages WHERE id = $1', [response.messageId])).rows[0];
    assert.deepEqual(row, { from_address: 'billing@Mail.Acme.example', from_name: 'Acme, Billing' });
    await h.outboxEmptied();
    const { job } = await h.lastJob();
    assert.equal(job.messageId, response.messageId);
    assert.deepEqual(job.from, { address: 'billing@Mail.Acme.example', name: 'Acme, Billing' });
  });

  test('without a From, the message and its job have none: the mailer sends From MAIL_FROM', async () => {
    const response = await send({});
    const row = (await h.pool.query('SELECT from_address, from_name FROM messages WHERE id = $1', [response.messageId])).rows[0];
    assert.deepEqual(row, { from_address: null, from_name: null });
    await h.outboxEmptied();
    const { job } = await h.lastJob();
    assert.equal(job.messageId, response.messageId);
    assert.equal(job.from, undefined);
  });

  test("a domain not verified, not the organization's or unknown is refused, naming it, and writes nothing", async () => {
    const before = await messages();
    for (const [address, domain] of [
      ['a@pending.acme.example', 'pending.acme.example'],
      ['a@rival.example', 'rival.example'],
      ['a@nowhere.example', 'nowhere.example'],
    ] as const) {
      const refused = await assertRefused(send({ fromAddress: address }), status.INVALID_ARGUMENT, 'from_domain_unverified');
      assert.deepEqual([...refused.fields], [domain]);
    }
    assert.equal(await messages(), before);
  });

  test('a key limited to some domains sends From them only, and must name one; the limit is judged before the domain', async () => {
    const limited = { keyFromDomains: ['mail.acme.example', 'pending.acme.example'] };
    assert.equal((await send({ ...limited, fromAddress: 'a@MAIL.acme.example' })).status, 'queued');
    const before = await messages();
    const outside = await assertRefused(send({ ...limited, fromAddress: 'a@news.acme.example' }), status.PERMISSION_DENIED, 'from_domain_not_allowed');
    assert.deepEqual([...outside.fields], ['news.acme.example', 'mail.acme.example', 'pending.acme.example']);
    const unnamed = await assertRefused(send(limited), status.PERMISSION_DENIED, 'from_domain_not_allowed');
    assert.deepEqual([...unnamed.fields], ['', 'mail.acme.example', 'pending.acme.example']);
    // Within the limit but not verified: the domain's own refusal.
    await assertRefused(send({ ...limited, fromAddress: 'a@pending.acme.example' }), status.INVALID_ARGUMENT, 'from_domain_unverified');
    assert.equal(await messages(), before);
  });

  test('a From the gateway would have refused is INVALID_ARGUMENT, not a database error', async () => {
    await assertRefused(send({ fromAddress: 'two@a.example, three@b.example' }), status.INVALID_ARGUMENT, 'invalid_argument');
    await assertRefused(send({ fromAddress: 'a@mail.acme.example', fromName: 'line\r\nBcc: x@y.example' }), status.INVALID_ARGUMENT, 'invalid_argument');
    await assertRefused(send({ fromName: 'Name without an address' }), status.INVALID_ARGUMENT, 'invalid_argument');
  });
});
