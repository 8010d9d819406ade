// Sending domains over the public API against the running system (issue 53, item 5), with a real DNS server on
// 127.0.0.1 that dispatch-svc's verifier asks (DNS_RESOLVER), so a record counts only once the test publishes it there:
// a domain added over the API gets its key and a `pending` record, a verification finds it (verified) or says why not
// (failed: missing, another key); a rotation keeps the old key signing until the new record verifies, and then the
// mail the SMTP sink receives verifies (mailauth, a verifier not written here) with the new selector. Another
// organization's domain is 404 like a missing one, both ways; each change has its audit row; every answer matches the
// OpenAPI document. A send may name its From on a verified domain (docs/contract.md, "Sending from your own domains"):
// its mail is From that mailbox and signed for that domain, and a key limited to some domains sends From them only.
// Its own system: the default one cannot be told where its DNS server is.
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import { dkimVerify } from 'mailauth/lib/dkim/verify.js';
import { simpleParser } from 'mailparser';
import { assertAccepted, assertCoded } from '../harness/contract-shapes.ts';
import { DnsServer } from '../harness/dns-server.ts';
import { documentedCall } from '../harness/documented-call.ts';
import { mailFiles } from '../harness/mailbox.ts';
import { openApiResponseCheck, type ResponseCheck } from '../harness/openapi.ts';
import { type HttpResult, type System, startSystem, type Tenant } from '../harness/system.ts';
import { anotherKey, validBody } from '../harness/tenants.ts';
import { assertTranslated, languageHeader } from '../harness/translation.ts';
import { waitFor } from '../harness/wait.ts';

/** The domain of the stack's MAIL_FROM (mailer-svc's default, `no-reply@notify.localhost`): the one the mailers sign. */
const mailDomain = 'notify.localhost';
const refreshMs = 200;

let dns: DnsServer;
let system: System;
let alpha: Tenant;
let beta: Tenant;
let checkResponse: ResponseCheck;

before(async () => {
  dns = await DnsServer.start();
  system = await startSystem({ env: { DNS_RESOLVER: dns.address, DOMAIN_VERIFY_INTERVAL: '100ms', DKIM_KEY_REFRESH: `${refreshMs}ms` } });
  alpha = await anotherKey(system, await system.createTenant('domains-alpha'), 'domains', ['domains:write', 'send']);
  beta = await anotherKey(system, await system.createTenant('domains-beta'), 'domains', ['domains:write']);
  await system.putTemplate(alpha.projectId, 'welcome');
  checkResponse = openApiResponseCheck((await system.request('/api/v1/openapi.json', { method: 'GET' })).body);
});

after(async () => {
  await system?.stop();
  await dns?.close();
});

interface DomainRecord {
  purpose: string;
  type: string;
  name: string;
  value: string;
  status: string;
  checked_at: string | null;
  failure: string | null;
  failure_detail: string | null;
}

/** A call of the domain routes as `caller`, checked against the OpenAPI document. */
const call = (caller: Tenant, method: string, path: string, body?: unknown, headers: Record<string, string> = {}): Promise<HttpResult> =>
  documentedCall(system, checkResponse, caller, {
    method,
    path,
    documented: path.replace(/^\/api\/v1\/domains\/[^/]+(?=\/|$)/, '/api/v1/domains/{id}').replace(/\/$/, ''),
    body,
    headers,
  });

const recordsOf = (response: HttpResult): DomainRecord[] => response.body.records as DomainRecord[];

async function addDomain(caller: Tenant, domain: string): Promise<HttpResult> {
  const added = await call(caller, 'POST', '/api/v1/domains/', { domain });
  assert.equal(added.status, 201, added.text);
  return added;
}

/** Asks for a verification (202) and polls GET until it ran; answers the domain then. */
async function verified(caller: Tenant, id: number): Promise<HttpResult> {
  const accepted = await call(caller, 'POST', `/api/v1/domains/${id}/verify`);
  assert.equal(accepted.status, 202, accepted.text);
  assert.equal(accepted.body.verifying, true);
  assert.equal(accepted.headers.get('location'), `/api/v1/domains/${id}/`);
  return waitFor(
    async () => {
      const read = await call(caller, 'GET', `/api/v1/domains/${id}/`);
      return read.body.verifying === false ? read : undefined;
    },
    { timeoutMs: 10_000, intervalMs: 100, what: `the verification of domain ${id}` },
  );
}

const publish = (record: DomainRecord): void => dns.publishTxt(record.name, record.value);

async function auditActions(target: number): Promise<string[]> {
  const { rows } = await system.db.query<{ action: string; detail: Record<string, unknown> }>(
    'SELECT action, detail FROM audit_events WHERE target = $1 AND organization_id = $2 ORDER BY id',
    [String(target), alpha.organizationId],
  );
  for (const row of rows) assert.doesNotMatch(JSON.stringify(row.detail), /PRIVATE|sealed/i, 'never a key in the audit log');
  return rows.map((row) => row.action);
}

test('a domain added is pending; a verification finds its record missing, then another key, then verified', async () => {
  const added = await addDomain(alpha, 'Mail.Alpha.example');
  const id = added.body.id as number;
  assert.equal(added.headers.get('location'), `/api/v1/domains/${id}/`);
  assert.deepEqual([added.body.domain, added.body.status, added.body.verifying, added.body.selector], ['mail.alpha.example', 'pending', false, 'notify']);
  const [dkim] = recordsOf(added);
  assert.ok(dkim);
  assert.deepEqual(
    [dkim.purpose, dkim.type, dkim.name, dkim.status, dkim.checked_at, dkim.failure],
    ['dkim', 'TXT', 'notify._domainkey.mail.alpha.example', 'pending', null, null],
  );
  assert.match(dkim.value, /^v=DKIM1; k=rsa; p=[A-Za-z0-9+/=]{300,}$/);
  assert.doesNotMatch(added.text, /PRIVATE/);

  const missing = await verified(alpha, id);
  assert.deepEqual([missing.body.status, recordsOf(missing)[0]?.failure], ['failed', 'record_missing']);
  assert.ok(dns.asked.includes('notify._domainkey.mail.alpha.example'), 'dispatch-svc asked the test DNS server');
  assert.match(String(recordsOf(missing)[0]?.failure_detail), /notify\._domainkey\.mail\.alpha\.example/);
  const spanish = await call(alpha, 'GET', `/api/v1/domains/${id}/`, undefined, { 'accept-language': 'es' });
  assert.match(String(recordsOf(spanish)[0]?.failure_detail), /^No hay ningún registro DKIM/);

  dns.publishTxt(dkim.name, dkim.value.replace(/p=.{20}/, `p=${'A'.repeat(20)}`));
  const different = await verified(alpha, id);
  assert.deepEqual([different.body.status, recordsOf(different)[0]?.failure], ['failed', 'key_mismatch']);

  publish(dkim);
  const good = await verified(alpha, id);
  const [record] = recordsOf(good);
  assert.deepEqual([good.body.status, record?.status, record?.failure, record?.failure_detail], ['verified', 'verified', null, null]);
  assert.ok(record?.checked_at && Date.parse(record.checked_at) > Date.parse(String(recordsOf(missing)[0]?.checked_at)));

  const listed = await call(alpha, 'GET', '/api/v1/domains');
  assert.deepEqual(
    (listed.body.results as Array<{ id: number; status: string }>).map((entry) => [entry.id, entry.status]),
    [[id, 'verified']],
  );
  assert.deepEqual(await auditActions(id), ['domain.create', 'domain.verify', 'domain.verify', 'domain.verify']);
});

/** Sends one mail as `caller` (alpha by default) and answers its raw bytes as the SMTP sink stored them. */
async function sendAndReceive(to: string, overrides: Record<string, unknown> = {}, caller: Tenant = alpha): Promise<Buffer> {
  const response = await system.send(caller, validBody('welcome', { to, ...overrides }));
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

/** The selector that signed `raw`, once mailauth verified the signature against the test DNS server's records. */
async function signedWith(raw: Buffer): Promise<string | undefined> {
  return (await signature(raw))?.selector;
}

/** The DKIM signature of `raw` that mailauth verified against the test DNS server's records. */
async function signature(raw: Buffer): Promise<{ selector?: string; signingDomain?: string } | undefined> {
  const resolver = async (name: string, type: string): Promise<string[][]> => {
    const found = type === 'TXT' ? dns.records.get(name.toLowerCase()) : undefined;
    if (found) return found.map((strings) => [...strings]);
    throw Object.assign(new Error(`queryTxt ENOTFOUND ${name}`), { code: 'ENOTFOUND' });
  };
  const [result] = (await dkimVerify(raw, { resolver, strict: true })).results;
  assert.equal(result?.status.result, 'pass', result?.info);
  return result;
}

const mailersRefreshed = (): Promise<void> => new Promise((done) => setTimeout(done, refreshMs * 5));

test('a rotation signs with the old key until the new record verifies, then with the new selector', async () => {
  const added = await addDomain(alpha, mailDomain);
  const id = added.body.id as number;
  publish(recordsOf(added)[0] as DomainRecord);
  assert.equal((await verified(alpha, id)).body.status, 'verified');
  await mailersRefreshed();
  assert.equal(await signedWith(await sendAndReceive('before-rotation@example.com')), 'notify');

  const rotated = await call(alpha, 'POST', `/api/v1/domains/${id}/rotate-dkim`);
  assert.equal(rotated.status, 200, rotated.text);
  const [current, next] = recordsOf(rotated);
  assert.equal(rotated.body.selector, 'notify', 'the old key still signs');
  assert.deepEqual([current?.purpose, current?.status], ['dkim', 'verified']);
  assert.equal(next?.purpose, 'dkim_rotation');
  assert.equal(next?.status, 'pending');
  const newSelector = /^(notify-[0-9a-f]{6})\._domainkey\.notify\.localhost$/.exec(next?.name ?? '')?.[1];
  assert.ok(newSelector, next?.name);
  assert.notEqual(next?.value, current?.value);

  // Not published yet: the verification fails for the new record, and the old key keeps signing.
  const unpublished = await verified(alpha, id);
  assert.deepEqual(
    recordsOf(unpublished).map((record) => [record.purpose, record.status, record.failure]),
    [
      ['dkim', 'verified', null],
      ['dkim_rotation', 'failed', 'record_missing'],
    ],
  );
  await mailersRefreshed();
  assert.equal(await signedWith(await sendAndReceive('during-rotation@example.com')), 'notify');

  publish(next as DomainRecord);
  const promoted = await verified(alpha, id);
  assert.equal(promoted.body.selector, newSelector);
  assert.deepEqual(
    recordsOf(promoted).map((record) => [record.purpose, record.name, record.status]),
    [['dkim', next?.name, 'verified']],
  );
  await mailersRefreshed();
  assert.equal(await signedWith(await sendAndReceive('after-rotation@example.com')), newSelector);
  assert.deepEqual(await auditActions(id), ['domain.create', 'domain.verify', 'domain.rotate_dkim', 'domain.verify', 'domain.verify']);
  const { rows } = await system.db.query<{ detail: Record<string, unknown> }>(
    "SELECT detail FROM audit_events WHERE action = 'domain.rotate_dkim' AND target = $1",
    [String(id)],
  );
  assert.deepEqual(rows[0]?.detail, { domain: mailDomain, signing_selector: 'notify', new_selector: newSelector });
});

test("another organization's domain is 404 like a missing one, both ways, and is left as it was", async () => {
  const alphaDomain = (await addDomain(alpha, 'tenancy-alpha.example')).body.id as number;
  const betaDomain = (await addDomain(beta, 'tenancy-beta.example')).body.id as number;
  for (const [caller, foreign] of [
    [alpha, betaDomain],
    [beta, alphaDomain],
    [alpha, 999_999_999],
  ] as const) {
    for (const [method, suffix] of [
      ['GET', '/'],
      ['POST', '/verify'],
      ['POST', '/rotate-dkim'],
      ['DELETE', '/'],
    ] as const) {
      assertCoded(await call(caller, method, `/api/v1/domains/${foreign}${suffix}`), 404, 'domain_not_found');
    }
    const listed = await call(caller, 'GET', '/api/v1/domains/');
    assert.ok(!(listed.body.results as Array<{ id: number }>).some((entry) => entry.id === foreign));
  }
  assertCoded(await call(alpha, 'GET', '/api/v1/domains/not-an-id/'), 404, 'domain_not_found');
  const { rows } = await system.db.query<{ count: number }>(
    'SELECT count(*)::int AS count FROM sending_domains WHERE id = ANY($1) AND next_selector IS NULL AND verify_requested_at IS NULL',
    [[alphaDomain, betaDomain]],
  );
  assert.equal(rows[0]?.count, 2, 'neither domain was touched');
});

test('a domain removed is gone, its audit row says which; a domain taken is 409', async () => {
  const added = await addDomain(alpha, 'removed.example');
  const id = added.body.id as number;
  assertCoded(await call(beta, 'POST', '/api/v1/domains/', { domain: 'REMOVED.example.' }), 409, 'domain_exists');
  const removed = await call(alpha, 'DELETE', `/api/v1/domains/${id}`);
  assert.equal(removed.status, 200, removed.text);
  assert.equal(removed.body.domain, 'removed.example');
  assertCoded(await call(alpha, 'GET', `/api/v1/domains/${id}/`), 404, 'domain_not_found');
  assertCoded(await call(alpha, 'DELETE', `/api/v1/domains/${id}/`), 404, 'domain_not_found');
  assert.deepEqual(await auditActions(id), ['domain.create', 'domain.delete']);
});

test('bad input is a precise 422 in English and Spanish; a key without domains:write is 403', async () => {
  const { en } = await assertTranslated('an invalid domain', (acceptLanguage) =>
    call(alpha, 'POST', '/api/v1/domains/', { domain: 'not a domain' }, languageHeader(acceptLanguage)),
  );
  assert.equal(en.status, 422);
  assert.deepEqual(Object.keys(en.body), ['domain']);
  assert.match(String((en.body.domain as string[])[0]), /mail\.example\.com/);
  for (const [body, fields] of [
    [{}, ['domain']],
    [{ domain: 7, extra: true }, ['domain', 'extra']],
    [{ domain: '  ' }, ['domain']],
    [{ domain: `${'a'.repeat(250)}.example` }, ['domain']],
    [{ domain: '-bad-.example' }, ['domain']],
  ] as const) {
    const refused = await call(alpha, 'POST', '/api/v1/domains/', body);
    assert.equal(refused.status, 422, refused.text);
    assert.deepEqual(Object.keys(refused.body).sort(), fields);
  }
  const sending = await anotherKey(system, alpha, 'sending only', ['sending']);
  for (const [method, path] of [
    ['GET', '/api/v1/domains/'],
    ['POST', '/api/v1/domains/'],
    ['GET', '/api/v1/domains/1/'],
    ['POST', '/api/v1/domains/1/verify'],
    ['POST', '/api/v1/domains/1/rotate-dkim'],
    ['DELETE', '/api/v1/domains/1/'],
  ] as const) {
    const refused = await call(sending, method, path, method === 'POST' && path.endsWith('domains/') ? { domain: 'x.example' } : undefined);
    assertCoded(refused, 403, 'insufficient_scope');
    assert.match(String(refused.body.detail), /domains:write/);
  }
});

/** A domain of `caller`'s organization, published and verified; answers its id. */
async function verifiedDomain(caller: Tenant, domain: string): Promise<number> {
  const added = await addDomain(caller, domain);
  publish(recordsOf(added)[0] as DomainRecord);
  const id = added.body.id as number;
  assert.equal((await verified(caller, id)).body.status, 'verified');
  return id;
}

test('a send From a verified domain arrives From that mailbox, signed for its domain; any other domain is a 422 on from', async () => {
  await verifiedDomain(alpha, 'billing.alpha.example');
  await verifiedDomain(beta, 'billing.beta.example');
  await addDomain(alpha, 'unverified.alpha.example');
  const raw = await sendAndReceive('from-own-domain@example.com', { from: '"Alpha, Billing" <invoices@Billing.Alpha.example>' });
  const mail = await simpleParser(raw);
  // nodemailer writes the domain in lower case, as DNS compares it.
  assert.deepEqual(mail.from?.value, [{ name: 'Alpha, Billing', address: 'invoices@billing.alpha.example' }]);
  assert.match(String(mail.messageId), /@billing\.alpha\.example>$/i);
  const signed = await signature(raw);
  assert.deepEqual([signed?.signingDomain, signed?.selector], ['billing.alpha.example', 'notify']);

  for (const from of ['a@unverified.alpha.example', 'a@billing.beta.example', 'a@nowhere.example']) {
    const domain = from.slice(2);
    const { en, es } = await assertTranslated(`a From on ${domain}`, (acceptLanguage) =>
      system.send(alpha, validBody('welcome', { from }), languageHeader(acceptLanguage)),
    );
    assert.equal(en.status, 422, en.text);
    assert.deepEqual(en.body, { from: [`${domain} is not a verified sending domain of this organization.`] });
    assert.deepEqual(es.body, { from: [`${domain} no es un dominio de envío verificado de esta organización.`] });
  }
});

test('a key limited to some domains sends From them only: another From, or none, is 403 from_domain_not_allowed', async () => {
  await verifiedDomain(alpha, 'limited.alpha.example');
  await verifiedDomain(alpha, 'other.alpha.example');
  const created = await system.authAdmin.call('CreateApiKey', {
    projectId: alpha.projectId,
    name: 'limited',
    scopes: ['send'],
    fromDomains: ['limited.alpha.example'],
  });
  const limited: Tenant = { ...alpha, keyId: created.key?.id ?? 0, apiKey: created.apiKey };
  const mail = await simpleParser(await sendAndReceive('limited@example.com', { from: 'Limited <news@limited.alpha.example>' }, limited));
  assert.deepEqual(mail.from?.value, [{ name: 'Limited', address: 'news@limited.alpha.example' }]);

  const before = await system.db.query<{ n: number }>('SELECT count(*)::int AS n FROM messages WHERE api_key_id = $1', [limited.keyId]);
  const { en, es } = await assertTranslated('a From outside the key', (acceptLanguage) =>
    system.send(limited, validBody('welcome', { from: 'a@other.alpha.example' }), languageHeader(acceptLanguage)),
  );
  assertCoded(en, 403, 'from_domain_not_allowed');
  assert.equal(en.body.detail, 'This API key may not send from other.alpha.example; it may send from limited.alpha.example.');
  assert.equal(es.body.detail, 'Esta clave de API no puede enviar desde other.alpha.example; puede enviar desde limited.alpha.example.');
  const unnamed = await system.send(limited, validBody('welcome'));
  assertCoded(unnamed, 403, 'from_domain_not_allowed');
  assert.equal(unnamed.body.detail, 'This API key may send only from limited.alpha.example: name a from address on one of them.');

  const batch = await documentedCall(system, checkResponse, limited, {
    method: 'POST',
    path: '/api/v1/send/batch/',
    documented: '/api/v1/send/batch',
    body: {
      messages: [validBody('welcome', { from: 'a@limited.alpha.example' }), validBody('welcome', { from: 'a@other.alpha.example' }), validBody('welcome')],
    },
  });
  assert.equal(batch.status, 200, batch.text);
  const results = batch.body.results as Array<{ status: number; code?: string }>;
  assert.deepEqual(
    results.map((entry) => [entry.status, entry.code]),
    [
      [202, undefined],
      [403, 'from_domain_not_allowed'],
      [403, 'from_domain_not_allowed'],
    ],
  );
  const after = await system.db.query<{ n: number }>('SELECT count(*)::int AS n FROM messages WHERE api_key_id = $1', [limited.keyId]);
  assert.equal(after.rows[0]?.n, (before.rows[0]?.n ?? 0) + 1, 'only the batch item within the limit was written');
});
