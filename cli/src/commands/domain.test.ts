// notifyctl domain against a DomainAdminService served in-process and, for `domain check`, a real DNS server on UDP
// (test/harness/dns-server.ts) that node:dns asks.
import assert from 'node:assert/strict';
import { generateKeyPairSync } from 'node:crypto';
import { after, before, describe, test } from 'node:test';
import { status } from '@grpc/grpc-js';
import { createRegistry, GrpcServer, UserError } from '@notify/platform';
import { compareDkimRecords } from '@notify/platform/mail';
import { type dispatch, dispatchProto } from '@notify/proto';
import { DnsServer } from '@notify/test/harness/dns-server.ts';
import { silentLogger } from '@notify/test/harness/logger.ts';
import { notifyctl, requestOf } from '../testing/notifyctl.ts';
import { txtStrings } from './domain.ts';

const publicKey = generateKeyPairSync('rsa', { modulusLength: 2048 }).publicKey.export({ type: 'spki', format: 'der' }).toString('base64');
const otherKey = generateKeyPairSync('rsa', { modulusLength: 2048 }).publicKey.export({ type: 'spki', format: 'der' }).toString('base64');
const record = `v=DKIM1; k=rsa; p=${publicKey}`;

describe('notifyctl domain: command lines', () => {
  test('add takes an organization, a domain and an optional selector; list an optional organization', async () => {
    assert.deepEqual(await requestOf(['domain', 'add', '--org', '3', '--domain', 'mail.example.com']), {
      organizationId: 3,
      domain: 'mail.example.com',
      selector: '',
    });
    assert.deepEqual(await requestOf(['domain', 'add', '--org', '3', '--domain', 'mail.example.com', '--selector', 's1']), {
      organizationId: 3,
      domain: 'mail.example.com',
      selector: 's1',
    });
    assert.deepEqual(await requestOf(['domain', 'list']), { organizationId: 0 });
    assert.deepEqual(await requestOf(['domain', 'list', '--org', '4']), { organizationId: 4 });
    assert.deepEqual(await requestOf(['domain', 'remove', '--org', '4', '--domain', 'x.example']), { organizationId: 4, domain: 'x.example' });
    assert.deepEqual(await requestOf(['domain', 'check', '--org', '4', '--domain', 'x.example', '--dns-server', '127.0.0.1:5353,[::1]:53,::1']), {
      organizationId: 4,
      domain: 'x.example',
    });
  });

  test('mistakes are usage errors, before any connection', async () => {
    const cases: [string[], RegExp][] = [
      [['domain', 'add', '--domain', 'mail.example.com'], /missing required option --org/],
      [['domain', 'add', '--org', '3'], /missing required option --domain/],
      [['domain', 'remove', '--org', 'x', '--domain', 'a.example'], /--org must be a positive integer, got 'x'/],
      [['domain', 'check', '--org', '3', '--domain', 'a.example', '--dns-server', 'dns.example.com'], /--dns-server must be IP addresses/],
      [['domain', 'check', '--org', '3', '--domain', 'a.example', '--dns-server', '127.0.0.1:70000'], /--dns-server must be IP addresses/],
    ];
    for (const [argv, message] of cases) {
      const outcome = await notifyctl(argv, { ADMIN_TOKEN: 'admin-token-present' });
      assert.equal(outcome.code, 2, argv.join(' '));
      assert.match(outcome.stderr, message);
    }
    const noToken = await notifyctl(['domain', 'list']);
    assert.equal(noToken.code, 2);
    assert.match(noToken.stderr, /ADMIN_TOKEN is not set: sending domains need the admin token of dispatch-svc/);
  });

  test('a DKIM record matches on its key, whatever the splitting into strings and the spacing', () => {
    const split = txtStrings(record);
    assert.ok(split.length === 2 && split.every((part) => part.length <= 255) && split.join('') === record);
    assert.equal(compareDkimRecords(record, [split]).status, 'published');
    assert.equal(compareDkimRecords(record, [['v=spf1 -all'], [`v=DKIM1;k=rsa;  p=${publicKey.slice(0, 100)} ${publicKey.slice(100)}`]]).status, 'published');
    assert.equal(compareDkimRecords(record, [[`v=DKIM1; k=rsa; p=${otherKey}`]]).status, 'different');
    assert.equal(compareDkimRecords(record, [['v=spf1 -all']]).status, 'missing');
    assert.equal(compareDkimRecords(record, []).status, 'missing');
  });
});

describe('notifyctl domain: against a DomainAdminService and DNS', () => {
  const token = 'admin-token-for-notifyctl-tests';
  const domain: dispatch.SendingDomain__Output = {
    id: 5,
    organizationId: 3,
    domain: 'mail.example.com',
    selector: 'notify',
    dnsName: 'notify._domainkey.mail.example.com',
    dnsValue: record,
    createdAt: '2026-11-25T10:00:00.000Z',
  };
  const received: object[] = [];
  const records = new Map<string, (readonly string[])[]>();
  let server: GrpcServer;
  let dns: DnsServer;
  let env: Record<string, string>;

  before(async () => {
    server = new GrpcServer({ logger: silentLogger(), registry: createRegistry('notifyctl-test') });
    server.add(
      dispatchProto.DomainAdminService.service,
      {
        AddDomain: async (request) => {
          received.push(request);
          if (request.domain === 'taken.example.com')
            throw new UserError(status.ALREADY_EXISTS, 'domain_exists', 'taken.example.com is already a sending domain');
          return domain;
        },
        ListDomains: async (request) => {
          received.push(request);
          return { domains: request.organizationId === 0 || request.organizationId === 3 ? [domain] : [] };
        },
        RemoveDomain: async (request) => {
          received.push(request);
          return { removed: true };
        },
      },
      [{ name: 'admin', token }],
    );
    const port = await server.listen(0, '127.0.0.1');
    dns = await DnsServer.start(records);
    env = { ADMIN_TOKEN: token, DISPATCH_SVC_ADDR: `127.0.0.1:${port}` };
  });

  after(async () => {
    await server?.close(1_000);
    await dns?.close();
  });

  test('add prints the TXT record to publish, as name and value and as a zone file line of strings of at most 255', async () => {
    const outcome = await notifyctl(['domain', 'add', '--org', '3', '--domain', 'mail.example.com'], env);
    assert.equal(outcome.code, 0, outcome.stderr);
    assert.deepEqual(received.at(-1), { organizationId: 3, domain: 'mail.example.com', selector: '' });
    assert.match(outcome.stdout, /^ {2}name: {2}notify\._domainkey\.mail\.example\.com$/m);
    assert.ok(outcome.stdout.includes(`  value: ${record}\n`));
    const [first, second] = txtStrings(record);
    assert.ok(outcome.stdout.includes(`notify._domainkey.mail.example.com. IN TXT ( "${first}" "${second}" )`));
    assert.doesNotMatch(outcome.stdout, /PRIVATE/);

    const json = await notifyctl(['domain', 'add', '--org', '3', '--domain', 'mail.example.com', '--json'], env);
    assert.deepEqual(JSON.parse(json.stdout), domain);
    const taken = await notifyctl(['domain', 'add', '--org', '3', '--domain', 'taken.example.com'], env);
    assert.equal(taken.code, 1);
    assert.match(taken.stderr, /domain_exists: taken\.example\.com is already a sending domain/);
  });

  test('list prints a table, remove says what it removed', async () => {
    const listed = await notifyctl(['domain', 'list'], env);
    assert.equal(listed.code, 0, listed.stderr);
    assert.match(listed.stdout, /^DOMAIN\s+ORG\s+SELECTOR\s+DNS NAME\s+CREATED$/m);
    assert.match(listed.stdout, /^mail\.example\.com\s+3\s+notify\s+notify\._domainkey\.mail\.example\.com\s+2026-11-25T10:00:00\.000Z$/m);
    const removed = await notifyctl(['domain', 'remove', '--org', '3', '--domain', 'mail.example.com', '--json'], env);
    assert.deepEqual(JSON.parse(removed.stdout), { removed: 'mail.example.com' });
  });

  test('check asks DNS for the record and says published (exit 0), different or missing (exit 1, on stderr)', async () => {
    const check = (...extra: string[]) =>
      notifyctl(['domain', 'check', '--org', '3', '--domain', 'Mail.Example.com', '--dns-server', dns.address, ...extra], env);

    records.delete('notify._domainkey.mail.example.com');
    const missing = await check();
    assert.equal(missing.code, 1);
    assert.equal(missing.stdout, '');
    assert.match(missing.stderr, /^notifyctl: missing: notify\._domainkey\.mail\.example\.com has no DKIM record yet/);
    const missingJson = await check('--json');
    assert.equal(missingJson.code, 1);
    assert.equal((JSON.parse(missingJson.stdout) as { status: string }).status, 'missing', 'the report still goes to stdout');
    assert.match(missingJson.stderr, /^notifyctl: missing: /);
    assert.ok(dns.asked.includes('notify._domainkey.mail.example.com'), 'the DNS server was asked');

    records.set('notify._domainkey.mail.example.com', [txtStrings(record)]);
    const published = await check('--json');
    assert.equal(published.code, 0, published.stderr);
    assert.deepEqual(JSON.parse(published.stdout), {
      domain: 'mail.example.com',
      dnsName: 'notify._domainkey.mail.example.com',
      expected: record,
      found: [record],
      status: 'published',
    });
    const publishedText = await check();
    assert.equal(publishedText.code, 0, publishedText.stderr);
    assert.match(publishedText.stdout, /^published: notify\._domainkey\.mail\.example\.com has the expected DKIM key/);

    records.set('notify._domainkey.mail.example.com', [[`v=DKIM1; k=rsa; p=${otherKey.slice(0, 200)}`, otherKey.slice(200)]]);
    const different = await check();
    assert.equal(different.code, 1);
    assert.equal(different.stdout, '');
    assert.match(different.stderr, /^notifyctl: different: notify\._domainkey\.mail\.example\.com has a DKIM record with another key/);
  });

  test('check of a domain the organization does not have says so', async () => {
    const outcome = await notifyctl(['domain', 'check', '--org', '4', '--domain', 'mail.example.com', '--dns-server', dns.address], env);
    assert.equal(outcome.code, 2);
    assert.match(outcome.stderr, /organization 4 has no sending domain mail\.example\.com/);
  });
});
