// What the mail sender puts on the wire, received by a real SMTP server (smtp-server) and read back with mailparser and
// mailauth: the VERP envelope sender, RFC 8058 unsubscribe headers, the From a job names (else MAIL_FROM), and a DKIM
// signature of the From's domain that verifies, its key fetched from a SigningKeyService served over gRPC.
import assert from 'node:assert/strict';
import { generateKeyPairSync, randomBytes } from 'node:crypto';
import type { AddressInfo } from 'node:net';
import { after, before, describe, test } from 'node:test';
import { createRegistry, OperationalError } from '@notify/platform';
import { createDataKey, readReturnPath, readUnsubscribeToken } from '@notify/platform/mail';
import type { JobSender } from '@notify/proto';
import { silentLogger } from '@notify/test/harness/logger.ts';
import { dkimVerify } from 'mailauth/lib/dkim/verify.js';
import { simpleParser } from 'mailparser';
import { SMTPServer } from 'smtp-server';
import { DkimKeys } from '../signing/dkim-keys.ts';
import { type FakeSigningKeys, startFakeSigningKeys } from '../testing/fake-signing-keys.ts';
import { parseSender } from './mail-identity.ts';
import { createMailSender, type MailSender } from './mail-sender.ts';
import { createMailerMetrics } from './metrics.ts';
import { createRelayMetrics } from './relay-metrics.ts';
import { Relays } from './relays.ts';

interface Received {
  mailFrom: string;
  rcptTo: string[];
  raw: Buffer;
}

const dataKey = createDataKey(randomBytes(32));
const bounceDomain = 'bounces.example.net';
const publicUrl = 'https://notify.example.net/base';

/** A domain's DKIM key pair: the private key dispatch-svc serves, and the TXT record DNS publishes. */
function keyPair(): { privateKey: string; record: string } {
  const pair = generateKeyPairSync('rsa', { modulusLength: 2048 });
  return {
    privateKey: pair.privateKey.export({ type: 'pkcs8', format: 'pem' }).toString(),
    record: `v=DKIM1; k=rsa; p=${pair.publicKey.export({ type: 'spki', format: 'der' }).toString('base64')}`,
  };
}
/** MAIL_FROM's domain's key, and those of two domains jobs name From. */
const published = new Map(['example.com', 'shop.example', 'news.example', 'later.example'].map((domain) => [domain, keyPair()]));

const received: Received[] = [];
let server: SMTPServer;
let sender: MailSender;
let dispatch: FakeSigningKeys;
let keys: DkimKeys;
const metrics = createMailerMetrics(createRegistry('mail-sender-test'));

before(async () => {
  dispatch = await startFakeSigningKeys(dataKey);
  keys = new DkimKeys({ domain: 'example.com', dataKey, fetch: dispatch.fetch, logger: silentLogger('dkim-keys') });
  server = new SMTPServer({
    secure: false,
    disabledCommands: ['STARTTLS'],
    authOptional: true,
    logger: false,
    onData(stream, session, callback) {
      const chunks: Buffer[] = [];
      stream.on('data', (chunk: Buffer) => chunks.push(chunk));
      stream.on('end', () => {
        received.push({
          mailFrom: session.envelope.mailFrom === false ? '' : session.envelope.mailFrom.address,
          rcptTo: session.envelope.rcptTo.map((rcpt) => rcpt.address),
          raw: Buffer.concat(chunks),
        });
        callback(null);
      });
    },
  });
  await new Promise<void>((ready) => server.listen(0, '127.0.0.1', ready));
  const relays = new Relays({
    defaultUrls: [`smtp://127.0.0.1:${(server.server.address() as AddressInfo).port}`],
    projects: { urls: () => undefined, named: () => [] },
    poolSize: 1,
    failureThreshold: 3,
    coolDownMs: 30_000,
    metrics: createRelayMetrics(createRegistry('mail-sender-test-relays')),
    logger: silentLogger('mail-sender-test'),
  });
  sender = createMailSender({
    relays,
    sender: parseSender('Example <no-reply@example.com>'),
    dataKey,
    bounceDomain,
    publicUrl,
    dkimKey: (domain) => keys.keyFor(domain),
    onSigned: (signed) => metrics.dkimMails.inc({ dkim: signed ? 'signed' : 'unsigned' }),
  });
});

after(async () => {
  sender?.close();
  await new Promise<void>((done) => server.close(() => done()));
  await dispatch?.close();
});

const mail = { subject: 'Your receipt', text: 'Thanks, Ana.', html: '<p>Thanks, Ana.</p>' };

async function send(messageId: number, to: string, unsubscribe: boolean, from?: JobSender): Promise<Received> {
  const outcome = await sender.send({ messageId, projectId: 42, to, template: { unsubscribe }, ...(from ? { from } : {}) }, mail);
  assert.equal(outcome.kind, 'accepted', JSON.stringify(outcome));
  const got = received.find((mail) => rawHeader(mail.raw, 'X-Notify-Message-Id')[0] === String(messageId));
  assert.ok(got, 'the server received the mail');
  return got;
}

/** A header's value as sent, unfolded (RFC 5322 2.2.3). */
function rawHeader(raw: Buffer, name: string): string[] {
  const head = raw
    .toString('utf8')
    .split('\r\n\r\n')[0]!
    .replace(/\r\n([ \t])/g, '$1');
  return head
    .split('\r\n')
    .filter((line) => line.toLowerCase().startsWith(`${name.toLowerCase()}:`))
    .map((line) => line.slice(name.length + 1).trim());
}

const signed = async (): Promise<number> => (await metrics.dkimMails.get()).values.find((value) => value.labels.dkim === 'signed')?.value ?? 0;
const unsigned = async (): Promise<number> => (await metrics.dkimMails.get()).values.find((value) => value.labels.dkim === 'unsigned')?.value ?? 0;

describe('the envelope', () => {
  test('MAIL FROM is the message’s VERP return path; a job naming no sender is From MAIL_FROM, its Message-ID on MAIL_FROM’s domain', async () => {
    const got = await send(1234, 'ana@example.org', false);
    assert.match(got.mailFrom, /^bounces\+[a-z2-7]+@bounces\.example\.net$/);
    assert.equal(readReturnPath(dataKey, got.mailFrom, bounceDomain), 1234);
    assert.deepEqual(got.rcptTo, ['ana@example.org']);
    const parsed = await simpleParser(got.raw);
    assert.deepEqual(parsed.from?.value, [{ address: 'no-reply@example.com', name: 'Example' }]);
    assert.equal(parsed.messageId, '<notify-1234@example.com>');
    assert.equal(parsed.headers.get('x-notify-message-id'), '1234');
  });

  test('a job naming a sender keeps the VERP return path', async () => {
    const got = await send(1235, 'ana@example.org', false, { address: 'billing@plain.example', name: 'Plain' });
    assert.equal(readReturnPath(dataKey, got.mailFrom, bounceDomain), 1235);
  });
});

describe('one-click unsubscribe', () => {
  test('a template that asks for it gets List-Unsubscribe with a signed link and mailto, and List-Unsubscribe-Post', async () => {
    const got = await send(77, 'Ana.Perez@Example.org', true);
    const [listUnsubscribe, ...more] = rawHeader(got.raw, 'List-Unsubscribe');
    assert.equal(more.length, 0);
    const match =
      /^<https:\/\/notify\.example\.net\/base\/u\/([A-Za-z0-9_-]+)>, <mailto:unsubscribe@bounces\.example\.net\?subject=unsubscribe%20([A-Za-z0-9_-]+)>$/.exec(
        listUnsubscribe ?? '',
      );
    assert.ok(match, `List-Unsubscribe: ${listUnsubscribe}`);
    assert.equal(match[1], match[2], 'both carry the same token');
    assert.deepEqual(readUnsubscribeToken(dataKey, match[1]!), { projectId: 42, messageId: 77, address: 'Ana.Perez@Example.org' });
    assert.deepEqual(rawHeader(got.raw, 'List-Unsubscribe-Post'), ['List-Unsubscribe=One-Click']);
    for (const line of got.raw.toString('utf8').split('\r\n\r\n')[0]!.split('\r\n')) assert.ok(line.length <= 998, 'no header line exceeds RFC 5322’s limit');

    // mailparser, a reader not ours, sees the same link and mailto.
    const parsed = await simpleParser(got.raw);
    const list = parsed.headers.get('list') as { unsubscribe?: { url?: string; mail?: string } } | undefined;
    assert.equal(list?.unsubscribe?.url, `https://notify.example.net/base/u/${match[1]}`);
    assert.equal(list?.unsubscribe?.mail, `unsubscribe@bounces.example.net?subject=unsubscribe%20${match[1]}`);
  });

  test('a template that does not ask gets neither header', async () => {
    const got = await send(78, 'ana@example.org', false);
    assert.deepEqual(rawHeader(got.raw, 'List-Unsubscribe'), []);
    assert.deepEqual(rawHeader(got.raw, 'List-Unsubscribe-Post'), []);
  });
});

describe('DKIM', () => {
  const resolver = async (name: string, type: string): Promise<string[][]> => {
    const record = published.get(name.replace(/^notify\._domainkey\./, ''))?.record;
    if (type === 'TXT' && name.startsWith('notify._domainkey.') && record) return [[record.slice(0, 255), record.slice(255)]];
    throw Object.assign(new Error(`no ${type} record for ${name}`), { code: 'ENOTFOUND' });
  };
  const serve = (domain: string) => dispatch.serveKey(domain, published.get(domain)!.privateKey);
  /** The one DKIM signature of a mail, checked by mailauth against the published keys. */
  const verify = async (got: Received) => {
    const verified = await dkimVerify(got.raw, { resolver, strict: true, sender: got.mailFrom });
    assert.equal(verified.results.length, 1);
    const [result] = verified.results;
    assert.equal(result?.status.result, 'pass', result?.info);
    return result;
  };

  test('a mail sent while there is a key carries a signature mailauth verifies against the published key', async () => {
    serve('example.com');
    await keys.refresh();
    const signedBefore = await signed();
    const got = await send(90, 'ana@example.org', true);
    const result = await verify(got);
    assert.equal(result?.signingDomain, 'example.com');
    assert.equal(result?.selector, 'notify');
    const signedFields =
      /\bh=([^;]+)/
        .exec(rawHeader(got.raw, 'DKIM-Signature')[0] ?? '')?.[1]
        ?.replace(/\s+/g, '')
        .toLowerCase()
        .split(':') ?? [];
    for (const field of ['from', 'to', 'subject', 'message-id', 'list-unsubscribe', 'list-unsubscribe-post'])
      assert.ok(signedFields.includes(field), `${field} is signed (h=${signedFields.join(':')})`);
    assert.equal(await signed(), signedBefore + 1);
  });

  test('a job naming a sender is From that mailbox, its Message-ID and signature on its domain, signed with that domain’s key', async () => {
    serve('shop.example');
    const got = await send(95, 'ana@example.org', true, { address: 'billing@Shop.Example', name: 'Shop Billing, Inc.' });
    // nodemailer writes the domain in lower case; the key and the Message-ID are the lower-case domain's too.
    assert.deepEqual(rawHeader(got.raw, 'From'), ['"Shop Billing, Inc." <billing@shop.example>']);
    const parsed = await simpleParser(got.raw);
    assert.deepEqual(parsed.from?.value, [{ address: 'billing@shop.example', name: 'Shop Billing, Inc.' }]);
    assert.equal(parsed.messageId, '<notify-95@shop.example>');
    const result = await verify(got);
    assert.equal(result?.signingDomain, 'shop.example');
    assert.equal(result?.status.aligned, 'shop.example', 'the signature aligns with the From domain (DMARC)');
  });

  test('concurrent jobs naming a domain not held yet wait for one fetch of its key, and all go out signed with it', async () => {
    serve('news.example');
    const from = { address: 'news@news.example', name: '' };
    const asked = dispatch.asked.length;
    const mails = await Promise.all([96, 97, 98].map((messageId) => send(messageId, `reader${messageId}@example.org`, false, from)));
    assert.deepEqual(dispatch.asked.slice(asked), ['news.example']);
    for (const got of mails) assert.equal((await verify(got))?.signingDomain, 'news.example');
    assert.deepEqual(rawHeader(mails[0]!.raw, 'From'), ['news@news.example'], 'no display name');
  });

  test('a job naming a sender whose domain has no key goes out unsigned, counted so', async () => {
    const unsignedBefore = await unsigned();
    const got = await send(99, 'ana@example.org', false, { address: 'ops@plain.example', name: 'Ops' });
    assert.deepEqual(rawHeader(got.raw, 'DKIM-Signature'), []);
    assert.equal((await simpleParser(got.raw)).from?.value[0]?.address, 'ops@plain.example');
    assert.equal(await unsigned(), unsignedBefore + 1);
  });

  test('a job naming a domain dispatch-svc cannot answer for yet is deferred, never handed to the relay unsigned', async () => {
    dispatch.serve('later.example', () => {
      throw new OperationalError('database down');
    });
    const count = received.length;
    const outcome = await sender.send(
      { messageId: 100, projectId: 42, to: 'ana@example.org', template: { unsubscribe: false }, from: { address: 'a@later.example', name: '' } },
      mail,
    );
    assert.deepEqual(outcome, { kind: 'temporary', reason: 'the DKIM key of later.example could not be fetched from dispatch-svc yet' });
    assert.equal(received.length, count, 'nothing reached the relay');
    // Tried again once dispatch-svc answers: signed with the domain's key.
    serve('later.example');
    assert.equal((await verify(await send(101, 'ana@example.org', false, { address: 'a@later.example', name: '' })))?.signingDomain, 'later.example');
  });

  test('a mail sent without a key is unsigned, and counted so', async () => {
    dispatch.remove('example.com');
    await keys.refresh();
    const unsignedBefore = await unsigned();
    const got = await send(91, 'ana@example.org', false);
    assert.deepEqual(rawHeader(got.raw, 'DKIM-Signature'), []);
    const verified = await dkimVerify(got.raw, { resolver });
    assert.ok(
      verified.results.every((result) => result.status.result === 'none'),
      JSON.stringify(verified.results.map((result) => result.info)),
    );
    assert.equal(await unsigned(), unsignedBefore + 1);
  });
});
