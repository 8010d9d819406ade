// Sending domains and their DKIM keys against a real database: DomainAdminService (admin token) keeps them,
// SigningKeyService (mailer token) hands the mailers the sealed key, which opens only with the data key.
import assert from 'node:assert/strict';
import { createPublicKey, createSign, createVerify, randomBytes } from 'node:crypto';
import { after, before, describe, test } from 'node:test';
import { status } from '@grpc/grpc-js';
import { createRegistry, GrpcClient, GrpcServer } from '@notify/platform';
import { createDataKey } from '@notify/platform/mail';
import { dispatchProto } from '@notify/proto';
import { assertRefused } from '@notify/test/harness/refusal.ts';
import { type Harness, startHarness } from '../testing/harness.ts';
import { domainAdminHandlers, signingKeyHandlers } from './domain-admin.ts';

const dataKey = createDataKey(randomBytes(32));
let h: Harness;
let server: GrpcServer;
let domains: GrpcClient<typeof dispatchProto.DomainAdminService.service>;
let keys: GrpcClient<typeof dispatchProto.SigningKeyService.service>;
let address: string;
let otherOrganizationId: number;

before(async () => {
  h = await startHarness();
  // The services on a server of their own, with a data key only this file knows.
  server = new GrpcServer({ logger: h.logger, registry: createRegistry('dispatch-domains-test') });
  server.add(dispatchProto.DomainAdminService.service, domainAdminHandlers({ pool: h.pool, dataKey }), [h.callers.admin]);
  server.add(dispatchProto.SigningKeyService.service, signingKeyHandlers({ pool: h.pool }), [h.callers.mailer]);
  address = `127.0.0.1:${await server.listen(0, '127.0.0.1')}`;
  domains = new GrpcClient(dispatchProto.DomainAdminService.service, address, { token: h.callers.admin.token, deadlineMs: 10_000 });
  keys = new GrpcClient(dispatchProto.SigningKeyService.service, address, { token: h.callers.mailer.token, deadlineMs: 5_000 });
  const other = await h.pool.query<{ id: number }>(
    `INSERT INTO organizations (name, plan_id) SELECT 'Other Org', plan_id FROM organizations WHERE id = $1 RETURNING id`,
    [h.ids.organizationId],
  );
  otherOrganizationId = other.rows[0]!.id;
});

after(async () => {
  domains?.close();
  keys?.close();
  await server?.close(1_000);
  await h?.close();
});

const publicKeyOf = (dnsValue: string) => {
  const match = /^v=DKIM1; k=rsa; p=([A-Za-z0-9+/=]+)$/.exec(dnsValue);
  assert.ok(match, `a DKIM record value: ${dnsValue}`);
  return createPublicKey({ key: Buffer.from(match[1]!, 'base64'), format: 'der', type: 'spki' });
};

describe('adding a sending domain', () => {
  test('answers the TXT record to publish, whose public key verifies what the sealed private key signs', async () => {
    const added = await domains.call('AddDomain', { organizationId: h.ids.organizationId, domain: 'Mail.Example.COM.', selector: '' });
    assert.deepEqual(
      { ...added, id: 0, createdAt: '', dnsValue: '' },
      {
        id: 0,
        organizationId: h.ids.organizationId,
        domain: 'mail.example.com',
        selector: 'notify',
        dnsName: 'notify._domainkey.mail.example.com',
        dnsValue: '',
        createdAt: '',
      },
    );
    const publicKey = publicKeyOf(added.dnsValue);
    assert.equal(publicKey.asymmetricKeyDetails?.modulusLength, 2048);

    const signing = await keys.call('GetSigningKey', { domain: 'MAIL.example.com' });
    assert.equal(signing.domain, 'mail.example.com');
    assert.equal(signing.selector, 'notify');
    assert.doesNotMatch(signing.sealedPrivateKey, /PRIVATE KEY/);
    assert.throws(() => dataKey.open(signing.sealedPrivateKey, 'dkim:other.example.com'), 'sealed for this domain only');
    const pem = dataKey.open(signing.sealedPrivateKey, 'dkim:mail.example.com');
    assert.match(pem, /^-----BEGIN PRIVATE KEY-----/);
    const signature = createSign('sha256').update('a header block').sign(pem);
    assert.ok(createVerify('sha256').update('a header block').verify(publicKey, signature));
  });

  test('stores the private key only sealed, and never answers it', async () => {
    const added = await domains.call('AddDomain', { organizationId: h.ids.organizationId, domain: 'sealed.example.org', selector: 's2026' });
    assert.doesNotMatch(JSON.stringify(added), /PRIVATE/);
    const listed = await domains.call('ListDomains', { organizationId: h.ids.organizationId });
    assert.doesNotMatch(JSON.stringify(listed), /PRIVATE/);
    const stored = await h.pool.query<{ row: string }>(
      `SELECT row_to_json(sending_domains)::text AS row FROM sending_domains WHERE domain = 'sealed.example.org'`,
    );
    assert.doesNotMatch(stored.rows[0]!.row, /PRIVATE|BEGIN/);
  });

  test('is ALREADY_EXISTS for a domain any organization has, in any case', async () => {
    await domains.call('AddDomain', { organizationId: h.ids.organizationId, domain: 'taken.example.net', selector: 'a' });
    await assertRefused(
      domains.call('AddDomain', { organizationId: otherOrganizationId, domain: 'TAKEN.example.net', selector: 'b' }),
      status.ALREADY_EXISTS,
      'domain_exists',
    );
  });

  test('refuses a malformed domain or selector, and an unknown organization', async () => {
    for (const [domain, selector] of [
      ['example', ''],
      ['-bad.example.com', ''],
      ['exa mple.com', ''],
      ['example.com', 'Upper'],
      ['example.com', 'under_score'],
      ['example.com', 'x'.repeat(64)],
      [`${'a'.repeat(63)}.${'b'.repeat(63)}.${'c'.repeat(63)}.${'d'.repeat(50)}.com`, 'notify'],
    ] as const) {
      const refused = await assertRefused(
        domains.call('AddDomain', { organizationId: h.ids.organizationId, domain, selector }),
        status.INVALID_ARGUMENT,
        'invalid_argument',
      );
      assert.ok(refused.fields.length > 0, `${domain} / ${selector}`);
    }
    await assertRefused(
      domains.call('AddDomain', { organizationId: 0, domain: 'zero.example.com', selector: '' }),
      status.INVALID_ARGUMENT,
      'invalid_argument',
    );
    await assertRefused(
      domains.call('AddDomain', { organizationId: 987_654_321, domain: 'nobody.example.com', selector: '' }),
      status.NOT_FOUND,
      'organization_not_found',
    );
  });
});

describe('listing and removing', () => {
  test('lists an organization’s domains by name, or every domain for organization 0', async () => {
    await domains.call('AddDomain', { organizationId: otherOrganizationId, domain: 'b.other.example', selector: '' });
    await domains.call('AddDomain', { organizationId: otherOrganizationId, domain: 'a.other.example', selector: '' });
    const own = await domains.call('ListDomains', { organizationId: otherOrganizationId });
    assert.deepEqual(
      own.domains.map((entry) => entry.domain),
      ['a.other.example', 'b.other.example'],
    );
    assert.ok(own.domains.every((entry) => entry.dnsName === `notify._domainkey.${entry.domain}` && entry.dnsValue.startsWith('v=DKIM1; k=rsa; p=')));
    const all = await domains.call('ListDomains', { organizationId: 0 });
    const names = all.domains.map((entry) => entry.domain);
    assert.deepEqual(names, [...names].sort());
    assert.ok(names.includes('a.other.example') && names.includes('mail.example.com'));
  });

  test('a removed domain has no signing key; removing it again, or from another organization, is NOT_FOUND', async () => {
    await domains.call('AddDomain', { organizationId: h.ids.organizationId, domain: 'gone.example.com', selector: '' });
    await assertRefused(
      domains.call('RemoveDomain', { organizationId: otherOrganizationId, domain: 'gone.example.com' }),
      status.NOT_FOUND,
      'domain_not_found',
    );
    assert.ok((await keys.call('GetSigningKey', { domain: 'gone.example.com' })).sealedPrivateKey.length > 0, 'still there');
    assert.deepEqual(await domains.call('RemoveDomain', { organizationId: h.ids.organizationId, domain: 'Gone.Example.com' }), { removed: true });
    await assertRefused(keys.call('GetSigningKey', { domain: 'gone.example.com' }), status.NOT_FOUND, 'domain_not_found');
    await assertRefused(
      domains.call('RemoveDomain', { organizationId: h.ids.organizationId, domain: 'gone.example.com' }),
      status.NOT_FOUND,
      'domain_not_found',
    );
  });
});

describe('the tokens', () => {
  test('the admin service refuses the mailer token and the signing key service the admin token', async () => {
    const wrongAdmin = new GrpcClient(dispatchProto.DomainAdminService.service, address, { token: h.callers.mailer.token, deadlineMs: 5_000 });
    const wrongKeys = new GrpcClient(dispatchProto.SigningKeyService.service, address, { token: h.callers.admin.token, deadlineMs: 5_000 });
    try {
      await assertRefused(wrongAdmin.call('ListDomains', { organizationId: 0 }), status.PERMISSION_DENIED, 'permission_denied');
      await assertRefused(wrongKeys.call('GetSigningKey', { domain: 'mail.example.com' }), status.PERMISSION_DENIED, 'permission_denied');
    } finally {
      wrongAdmin.close();
      wrongKeys.close();
    }
  });
});
