// The mailer's DKIM key holder against a SigningKeyService served in-process over gRPC: it follows what dispatch-svc
// answers for MAIL_FROM's domain and for the domains jobs name, keeps the last key when dispatch-svc cannot answer,
// fetches a new domain once however many jobs wait for it, drops a domain no job names any more, and never writes a key
// to its logs.
import assert from 'node:assert/strict';
import { generateKeyPairSync, randomBytes } from 'node:crypto';
import { Writable } from 'node:stream';
import { after, before, describe, test } from 'node:test';
import { createLogger, OperationalError } from '@notify/platform';
import { createDataKey } from '@notify/platform/mail';
import { type FakeSigningKeys, startFakeSigningKeys } from '../testing/fake-signing-keys.ts';
import { type DkimKey, DkimKeys, idleDomainMs, SigningKeyUnavailable } from './dkim-keys.ts';

const dataKey = createDataKey(randomBytes(32));
const pem = (): string => generateKeyPairSync('rsa', { modulusLength: 2048 }).privateKey.export({ type: 'pkcs8', format: 'pem' }).toString();
const first = pem();
const second = pem();
const shopKey = pem();
const rotated = pem();

const logged: string[] = [];
const logger = createLogger('dkim-keys-test', 'debug', new Writable({ write: (chunk: Buffer, _encoding, done) => done(void logged.push(chunk.toString())) }));
let dispatch: FakeSigningKeys;
/** The clock domains' idleness is measured on. */
let clock = 0;
let keys: DkimKeys;

before(async () => {
  dispatch = await startFakeSigningKeys(dataKey);
  keys = new DkimKeys({ domain: 'example.com', dataKey, fetch: dispatch.fetch, logger, now: () => clock });
});

after(async () => {
  await dispatch?.close();
});

/** A key as the tests compare it: its private key as the PEM it was served as. */
const shown = (key: DkimKey | undefined) => key && { ...key, privateKey: key.privateKey.export({ type: 'pkcs8', format: 'pem' }).toString() };

/** The key held for a domain, which comes back without waiting (the mail sender's path for every message but a domain's first). */
function heldKey(domain: string) {
  const key = keys.keyFor(domain);
  assert.ok(!(key instanceof Promise), `${domain}'s key is held`);
  return shown(key);
}

const askedFor = (domain: string): number => dispatch.asked.filter((name) => name === domain).length;
const failing = () => {
  throw new OperationalError('database down');
};

describe('the DKIM key of MAIL_FROM’s domain', () => {
  test('is none until dispatch-svc has one, then the opened key for MAIL_FROM’s domain', async () => {
    await keys.refresh();
    assert.equal(heldKey('example.com'), undefined);
    assert.deepEqual(dispatch.asked, ['example.com']);
    dispatch.serveKey('example.com', first);
    await keys.refresh();
    assert.deepEqual(heldKey('example.com'), { domainName: 'example.com', keySelector: 'notify', privateKey: first });
  });

  test('is kept while dispatch-svc fails, and when the key it answers does not open', async () => {
    dispatch.serve('example.com', failing);
    await keys.refresh();
    assert.equal(heldKey('example.com')?.privateKey, first);
    dispatch.serveKey('example.com', second, { selector: 's2', sealedFor: 'other.example.com' });
    await keys.refresh();
    assert.equal(heldKey('example.com')?.privateKey, first, 'a key sealed for another domain is refused');
    assert.ok(logged.some((line) => /cannot be opened with NOTIFY_DATA_KEY/.test(line)));
  });

  test('follows a new key, and is none again once the domain is removed', async () => {
    dispatch.serveKey('example.com', second, { selector: 's2' });
    await keys.refresh();
    assert.deepEqual(heldKey('example.com'), { domainName: 'example.com', keySelector: 's2', privateKey: second });
    dispatch.remove('example.com');
    await keys.refresh();
    assert.equal(heldKey('example.com'), undefined);
  });
});

describe('the DKIM keys of the domains jobs name From', () => {
  test('a domain not held yet is fetched once for all the jobs naming it meanwhile, then held', async () => {
    dispatch.serveKey('shop.example', shopKey);
    const release = dispatch.hold();
    const waiting = Array.from({ length: 5 }, () => keys.keyFor('shop.example'));
    assert.ok(
      waiting.every((key) => key instanceof Promise),
      'every job waits for the first fetch',
    );
    // A refresh while the first fetch is under way leaves the domain to it.
    const refreshing = keys.refresh();
    release();
    await refreshing;
    const expected = { domainName: 'shop.example', keySelector: 'notify', privateKey: shopKey };
    for (const key of await Promise.all(waiting)) assert.deepEqual(shown(key), expected);
    assert.equal(askedFor('shop.example'), 1, 'one fetch');
    assert.deepEqual(heldKey('shop.example'), expected);
    assert.equal(askedFor('shop.example'), 1);
  });

  test('a held domain follows its rotation and removal on refresh, and keeps its key while dispatch-svc fails', async () => {
    dispatch.serveKey('shop.example', rotated, { selector: 'notify-a1b2c3' });
    await keys.refresh();
    assert.deepEqual(heldKey('shop.example'), { domainName: 'shop.example', keySelector: 'notify-a1b2c3', privateKey: rotated });
    dispatch.serve('shop.example', failing);
    await keys.refresh();
    assert.equal(heldKey('shop.example')?.privateKey, rotated);
    dispatch.remove('shop.example');
    await keys.refresh();
    assert.equal(heldKey('shop.example'), undefined, 'domain_not_found: unsigned');
  });

  test('a domain with no key is unsigned without asking again per job, and signed from the refresh after one is added', async () => {
    assert.equal(await keys.keyFor('plain.example'), undefined);
    assert.equal(heldKey('plain.example'), undefined);
    assert.equal(askedFor('plain.example'), 1);
    assert.ok(logged.some((line) => line.includes('"domain":"plain.example"') && line.includes('sending mail unsigned')));
    dispatch.serveKey('plain.example', shopKey);
    await keys.refresh();
    assert.equal(heldKey('plain.example')?.domainName, 'plain.example');
  });

  test("a job's domain whose first fetch dispatch-svc fails is refused, never unsigned, until dispatch-svc answers", async () => {
    dispatch.serve('blip.example', failing);
    await assert.rejects(async () => keys.keyFor('blip.example'), SigningKeyUnavailable);
    const asked = askedFor('blip.example');
    await assert.rejects(async () => keys.keyFor('blip.example'), SigningKeyUnavailable, 'the next job asks again, and is refused again');
    assert.equal(askedFor('blip.example'), asked + 1);
    dispatch.serveKey('blip.example', shopKey);
    assert.equal(shown(await keys.keyFor('blip.example'))?.privateKey, shopKey, 'once dispatch-svc answers, the job gets the key');
    assert.equal(heldKey('blip.example')?.privateKey, shopKey, 'and the next one at once');
  });

  test('a domain no job has named for an hour is dropped and fetched anew by the next job; MAIL_FROM’s is kept', async () => {
    dispatch.serveKey('shop.example', shopKey);
    clock += idleDomainMs - 1_000;
    heldKey('plain.example');
    clock += 2_000;
    const before = dispatch.asked.length;
    await keys.refresh();
    assert.deepEqual(dispatch.asked.slice(before).sort(), ['example.com', 'plain.example'], 'shop.example and blip.example are no longer fetched');
    assert.ok(logged.some((line) => line.includes('"domain":"shop.example"') && line.includes('no longer held')));
    const again = keys.keyFor('shop.example');
    assert.ok(again instanceof Promise, 'the next job waits for a fetch again');
    assert.equal(shown(await again)?.privateKey, shopKey);
    assert.equal(askedFor('shop.example'), 6, 'one first fetch, four refreshes, one first fetch again');
  });
});

describe('the logs', () => {
  test('name domains and selectors, never a private key', () => {
    assert.ok(logged.length >= 3, 'changes and failures were logged');
    const everything = logged.join('\n');
    assert.doesNotMatch(everything, /PRIVATE KEY/);
    assert.match(everything, /notify-a1b2c3\._domainkey\.shop\.example/);
    for (const key of [first, second, shopKey, rotated]) assert.ok(!everything.includes(key.split('\n')[1]!), 'no line of a key');
  });
});
