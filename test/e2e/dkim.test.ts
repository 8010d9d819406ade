// DKIM against the running services: `notifyctl domain add` for MAIL_FROM's domain makes dispatch-svc generate and seal
// a key, the mailers fetch it, and the mail the SMTP sink receives carries a signature that mailauth (a verifier not
// written here) verifies, its DNS lookup answered with the record `domain add` printed. After `domain remove`, once the
// mailers refreshed (DKIM_KEY_REFRESH, short here), mail goes out unsigned.
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { dkimVerify } from 'mailauth/lib/dkim/verify.js';
import { simpleParser } from 'mailparser';
import { assertAccepted } from '../harness/contract-shapes.ts';
import { mailFiles } from '../harness/mailbox.ts';
import { type System, startSystem, type Tenant } from '../harness/system.ts';
import { validBody } from '../harness/tenants.ts';
import { waitFor } from '../harness/wait.ts';

/** MAIL_FROM of the stack's mailers (mailer-svc's default): its domain is the one that gets a key. */
const mailFrom = 'Notify <no-reply@notify.localhost>';
const mailDomain = 'notify.localhost';
const refreshMs = 200;

let system: System;
let tenant: Tenant;

before(async () => {
  system = await startSystem({ env: { MAIL_FROM: mailFrom, DKIM_KEY_REFRESH: `${refreshMs}ms` } });
  tenant = await system.createTenant('dkim');
  await system.putTemplate(tenant.projectId, 'welcome');
});

after(async () => {
  await system?.stop();
});

const notifyctl = (...args: string[]): Promise<string> => system.notifyctlOk(...args);

/** Sends one mail and answers its raw bytes as the SMTP sink stored them. */
async function sendAndReceive(to: string): Promise<Buffer> {
  const response = await system.send(tenant, validBody('welcome', { to }));
  assertAccepted(response);
  const messageId = String(response.body.message_id);
  return waitFor(
    async () => {
      for (const name of mailFiles(system.resources.mailDir)) {
        const raw = readFileSync(join(system.resources.mailDir, name));
        if ((await simpleParser(raw)).headers.get('x-notify-message-id') === messageId) return raw;
      }
      return undefined;
    },
    { timeoutMs: 20_000, intervalMs: 100, what: `the mail of message ${messageId}` },
  );
}

/** Waits until every mailer has fetched the key again (a few refresh intervals). */
const mailersRefreshed = (): Promise<void> => sleep(refreshMs * 5);

let published: { dnsName: string; dnsValue: string } | undefined;

/** The DNS mailauth asks: the TXT record `domain add` told us to publish, split into strings as DNS carries it. */
async function resolver(name: string, type: string): Promise<string[][]> {
  if (type === 'TXT' && published && name.toLowerCase() === published.dnsName) {
    const strings: string[] = [];
    for (let start = 0; start < published.dnsValue.length; start += 255) strings.push(published.dnsValue.slice(start, start + 255));
    return [strings];
  }
  throw Object.assign(new Error(`queryTxt ENOTFOUND ${name}`), { code: 'ENOTFOUND' });
}

test('mail From a domain with a key is signed, and the signature verifies against the published record', async () => {
  const added = JSON.parse(await notifyctl('domain', 'add', '--org', String(tenant.organizationId), '--domain', mailDomain, '--selector', 'e2e', '--json')) as {
    domain: string;
    selector: string;
    dnsName: string;
    dnsValue: string;
  };
  assert.deepEqual([added.domain, added.selector, added.dnsName], [mailDomain, 'e2e', `e2e._domainkey.${mailDomain}`]);
  assert.match(added.dnsValue, /^v=DKIM1; k=rsa; p=[A-Za-z0-9+/=]{300,}$/);
  assert.doesNotMatch(JSON.stringify(added), /PRIVATE/);
  published = added;
  await mailersRefreshed();

  const raw = await sendAndReceive('signed@example.com');
  const verified = await dkimVerify(raw, { resolver, strict: true });
  assert.equal(verified.results.length, 1, JSON.stringify(verified.results.map((result) => result.info)));
  const [result] = verified.results;
  assert.equal(result?.status.result, 'pass', result?.info);
  assert.equal(result?.signingDomain, mailDomain);
  assert.equal(result?.selector, 'e2e');

  // The same mail altered in transit no longer verifies.
  const altered = Buffer.from(raw.toString('utf8').replace(/^Subject: (.*)$/m, 'Subject: $1 (changed)'));
  assert.notEqual((await dkimVerify(altered, { resolver })).results[0]?.status.result, 'pass');

  const listed = JSON.parse(await notifyctl('domain', 'list', '--org', String(tenant.organizationId), '--json')) as {
    domains: { domain: string; dnsValue: string }[];
  };
  assert.deepEqual(
    listed.domains.map((entry) => [entry.domain, entry.dnsValue]),
    [[mailDomain, added.dnsValue]],
  );
});

test('after `domain remove`, mail goes out unsigned', async () => {
  assert.ok(published, 'the first test added the domain');
  const removed = JSON.parse(await notifyctl('domain', 'remove', '--org', String(tenant.organizationId), '--domain', mailDomain, '--json')) as {
    removed: string;
  };
  assert.deepEqual(removed, { removed: mailDomain });
  await mailersRefreshed();

  const raw = await sendAndReceive('unsigned@example.com');
  assert.doesNotMatch(raw.toString('utf8').split('\r\n\r\n')[0] ?? '', /^DKIM-Signature:/im);
  const verified = await dkimVerify(raw, { resolver });
  assert.ok(
    verified.results.every((entry) => entry.status.result === 'none'),
    JSON.stringify(verified.results.map((entry) => entry.info)),
  );
});
