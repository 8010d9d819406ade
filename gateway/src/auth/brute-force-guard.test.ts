import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { Writable } from 'node:stream';
import { after, test } from 'node:test';
import { createLogger, createRegistry } from '@notify/platform';
import { testEnvironment } from '@notify/test/harness/environment.ts';
import { Redis } from 'ioredis';
import { ApiError } from '../errors/api-error.ts';
import { text } from '../i18n/messages.ts';
import { connectRedis } from '../rate-limit/redis.ts';
import { loadedDirectory } from '../testing/key-directory.ts';
import { KeyRefused } from './authorize.ts';
import { BruteForceGuard, type BruteForceMetrics, createBruteForceMetrics } from './brute-force-guard.ts';
import type { KeyDirectory } from './key-directory.ts';

const lines: Array<Record<string, unknown>> = [];
const logger = createLogger(
  'test',
  'warn',
  new Writable({
    write: (chunk: Buffer, _encoding, done) => {
      lines.push(JSON.parse(chunk.toString('utf8')) as Record<string, unknown>);
      done();
    },
  }),
);
const redisUrl = testEnvironment.redisUrl;
const prefix = `notify-t-${randomBytes(4).toString('hex')}:`;
const clients: Redis[] = [];

after(async () => {
  const admin = new Redis(redisUrl);
  const keys = await admin.keys(`${prefix}*`);
  if (keys.length > 0) await admin.del(...keys);
  await admin.quit();
  for (const client of clients) client.disconnect();
});

/** Keys in the issued form: `nk_` + 16 hex digits of prefix, a 43-character secret. */
const key = (name: string, secret = 'right'): string => `nk_${Buffer.from(name.padEnd(8, '_').slice(0, 8)).toString('hex')}.${secret.padEnd(43, '0')}`;
const prefixOf = (apiKey: string): string => apiKey.split('.')[0] as string;

interface Guarded {
  readonly guard: BruteForceGuard;
  readonly directory: KeyDirectory;
  readonly metrics: BruteForceMetrics;
}

/** A guard whose directory knows the prefixes of `existing` keys, as loaded from auth-svc at start. */
async function guard(
  options: { url?: string; points?: number; windowSeconds?: number; replicas?: number; existing?: readonly string[] } = {},
): Promise<Guarded> {
  const redis = connectRedis(options.url ?? redisUrl, logger);
  clients.push(redis);
  await new Promise((resolve) => redis.once('ready', resolve).once('error', resolve));
  const directory = await loadedDirectory((options.existing ?? []).map(prefixOf));
  const metrics = createBruteForceMetrics(createRegistry('gateway-test'));
  const limiter = new BruteForceGuard({
    redis,
    keyPrefix: prefix,
    rate: { points: options.points ?? 3, windowSeconds: options.windowSeconds ?? 60 },
    replicas: options.replicas ?? 1,
    directory,
    metrics,
    logger,
  });
  return { guard: limiter, directory, metrics };
}

/**
 * A stand-in for checks 2-4 with auth-svc's verdicts: the keys that exist (by prefix) with their one right secret,
 * those revoked, and every credential it was asked to judge.
 */
function authenticator(valid: readonly string[], revoked: readonly string[] = []) {
  const asked: Array<string | undefined> = [];
  return {
    asked,
    for(apiKey: string | undefined) {
      return async (): Promise<string> => {
        asked.push(apiKey);
        if (apiKey === undefined) throw new KeyRefused('malformed');
        if (revoked.includes(apiKey)) throw new KeyRefused('revoked');
        if (valid.includes(apiKey)) return `access for ${apiKey}`;
        throw new KeyRefused(valid.some((each) => prefixOf(each) === prefixOf(apiKey)) ? 'wrong_secret' : 'unknown_key');
      };
    },
  };
}

const count = async (counter: BruteForceMetrics['failures'] | BruteForceMetrics['throttled'], label: string): Promise<number> =>
  (await counter.get()).values.find((value) => Object.values(value.labels).includes(label))?.value ?? 0;

/** The status the guard's answer maps to: 200 for an access, else the ApiError's status. */
async function outcome(promise: Promise<unknown>): Promise<number | string> {
  try {
    await promise;
    return 200;
  } catch (error) {
    if (error instanceof ApiError) return error.status;
    throw error;
  }
}

test('guesses naming no key: up to the limit 401, and every later one 429 without being asked about', async () => {
  const { guard: limiter, metrics } = await guard();
  const auth = authenticator([]);
  const statuses = [];
  for (let attempt = 0; attempt < 6; attempt++)
    statuses.push(await outcome(limiter.check('192.0.2.1', key(`guess${attempt}`), auth.for(key(`guess${attempt}`)))));
  assert.deepEqual(statuses, [401, 401, 401, 429, 429, 429]);
  assert.equal(auth.asked.length, 3, 'auth-svc is asked about no more guesses than the budget');
  const refusal = await limiter.check('192.0.2.1', key('guess'), auth.for(key('guess'))).catch((error: unknown) => error);
  assert.ok(refusal instanceof ApiError);
  assert.equal(refusal.code, undefined, 'the body is {detail} alone, like the contract 429');
  const seconds = Number(refusal.headers['Retry-After']);
  assert.ok(seconds >= 1 && seconds <= 60, `Retry-After ${seconds}`);
  assert.deepEqual(refusal.detail, text('throttled', { seconds }));
  assert.equal(lines.filter((line) => line.address === '192.0.2.1').length, 1, 'one warning per blocked window');
  assert.equal(await count(metrics.failures, 'unknown_key'), 3);
  assert.equal(await count(metrics.throttled, 'address'), 4);
});

test('a malformed key, which auth-svc is never asked about, counts against the address too', async () => {
  const { guard: limiter, metrics } = await guard({ points: 2 });
  const auth = authenticator([]);
  const statuses = [];
  for (let attempt = 0; attempt < 3; attempt++) statuses.push(await outcome(limiter.check('192.0.2.2', undefined, auth.for(undefined))));
  statuses.push(await outcome(limiter.check('192.0.2.2', 'not-in-the-issued-form', auth.for('not-in-the-issued-form'))));
  assert.deepEqual(statuses, [401, 401, 429, 429]);
  assert.equal(await count(metrics.failures, 'malformed'), 2);
});

test('a real key is judged and accepted from a blocked address, though this replica never saw it accepted', async () => {
  const valid = [key('alice'), key('bob')];
  const { guard: limiter } = await guard({ points: 2, existing: valid });
  const auth = authenticator(valid);
  for (let attempt = 0; attempt < 4; attempt++) await outcome(limiter.check('192.0.2.3', key(`guess${attempt}`), auth.for(key(`guess${attempt}`))));
  assert.equal(await outcome(limiter.check('192.0.2.3', key('guess9'), auth.for(key('guess9')))), 429);
  for (const apiKey of valid) assert.equal(await limiter.check('192.0.2.3', apiKey, auth.for(apiKey)), `access for ${apiKey}`);
  assert.equal(await outcome(limiter.check('192.0.2.4', key('guess9'), auth.for(key('guess9')))), 401, 'another address is not blocked');
});

test('a key created after the directory was loaded is learnt from its first acceptance, then passes a blocked address', async () => {
  const fresh = key('fresh');
  const { guard: limiter, directory } = await guard({ points: 1 });
  const auth = authenticator([fresh]);
  assert.equal(await outcome(limiter.check('192.0.2.5', fresh, auth.for(fresh))), 200);
  assert.equal(directory.has(prefixOf(fresh)), true);
  for (let attempt = 0; attempt < 2; attempt++) await outcome(limiter.check('192.0.2.5', key('guess'), auth.for(key('guess'))));
  assert.equal(await outcome(limiter.check('192.0.2.5', key('guess'), auth.for(key('guess')))), 429);
  assert.equal(await outcome(limiter.check('192.0.2.5', fresh, auth.for(fresh))), 200);
});

test('wrong secrets for a real key count against that key, not the address: past the limit 429, and the right secret still passes', async () => {
  const owned = key('owned');
  const { guard: limiter, metrics } = await guard({ points: 2, existing: [owned] });
  const auth = authenticator([owned]);
  const statuses = [];
  for (let attempt = 0; attempt < 4; attempt++)
    statuses.push(await outcome(limiter.check('192.0.2.6', key('owned', `wrong${attempt}`), auth.for(key('owned', `wrong${attempt}`)))));
  assert.deepEqual(statuses, [401, 401, 429, 429]);
  assert.equal(await outcome(limiter.check('192.0.2.6', owned, auth.for(owned))), 200, 'the owner is never locked out of their key');
  assert.equal(await outcome(limiter.check('192.0.2.6', key('guess'), auth.for(key('guess')))), 401, "the address was not charged for the key's failures");
  assert.equal(
    await outcome(limiter.check('192.0.2.99', key('owned', 'wrong9'), auth.for(key('owned', 'wrong9')))),
    429,
    'the key is limited from every address',
  );
  assert.equal(await count(metrics.failures, 'wrong_secret'), 5);
  assert.equal(await count(metrics.throttled, 'key'), 3);
  assert.ok(
    lines.some((line) => line.key === prefixOf(owned) && line.reason === 'wrong_secret'),
    'one warning names the key prefix',
  );
});

test('a revoked key is refused for the key, counted as revoked, and learnt as a key even if the directory missed it', async () => {
  const doomed = key('doomed');
  const { guard: limiter, directory, metrics } = await guard({ points: 1 });
  const auth = authenticator([], [doomed]);
  assert.deepEqual(
    [await outcome(limiter.check('192.0.2.7', doomed, auth.for(doomed))), await outcome(limiter.check('192.0.2.7', doomed, auth.for(doomed)))],
    [401, 429],
  );
  assert.equal(directory.has(prefixOf(doomed)), true);
  assert.equal(await count(metrics.failures, 'revoked'), 2);
  assert.equal(await outcome(limiter.check('192.0.2.7', key('guess'), auth.for(key('guess')))), 401, 'the address is still within its limit');
});

test('only 401s count: a valid key with a bad organization (400, 403) or a dependency down (503) is no failure', async () => {
  const { guard: limiter, directory } = await guard({ points: 1 });
  const someKey = key('some');
  const refusals = [
    new ApiError(400, 'invalid_header', text('organization.invalid')),
    new ApiError(403, 'permission_denied', text('permission_denied')),
    new ApiError(503, 'service_unavailable', text('service_unavailable')),
  ];
  for (let round = 0; round < 2; round++) {
    for (const refusal of refusals) {
      assert.equal(await outcome(limiter.check('192.0.2.8', someKey, () => Promise.reject(refusal))), refusal.status);
    }
  }
  const guesses = [];
  for (let attempt = 0; attempt < 2; attempt++) guesses.push(await outcome(limiter.check('192.0.2.8', key('guess'), authenticator([]).for(key('guess')))));
  assert.deepEqual(guesses, [401, 429], 'the first real failure is still within the limit');
  // auth-svc accepted the key (400 and 403 come after that): it names a key, and passes the blocked address.
  assert.equal(directory.has(prefixOf(someKey)), true);
  assert.equal(await outcome(limiter.check('192.0.2.8', someKey, async () => 'ok')), 200);
});

test('every address of one IPv6 /64 shares a count, as does an IPv4 client seen through a dual-stack socket', async () => {
  const { guard: limiter } = await guard({ points: 2 });
  const auth = authenticator([]);
  const statuses = [];
  for (const address of ['2001:db8:1:2::1', '2001:db8:1:2::2', '2001:db8:1:2:ffff::3'])
    statuses.push(await outcome(limiter.check(address, key('guess'), auth.for(key('guess')))));
  assert.deepEqual(statuses, [401, 401, 429]);
  await outcome(limiter.check('::ffff:192.0.2.9', key('guess'), auth.for(key('guess'))));
  await outcome(limiter.check('192.0.2.9', key('guess'), auth.for(key('guess'))));
  assert.equal(await outcome(limiter.check('::ffff:192.0.2.9', key('guess'), auth.for(key('guess')))), 429);
});

test('the counts are shared by every replica through Redis, under the key prefix', async () => {
  const owned = key('shared');
  const { guard: first } = await guard({ points: 2, existing: [owned] });
  const { guard: second } = await guard({ points: 2, existing: [owned] });
  const auth = authenticator([owned]);
  assert.deepEqual(
    [
      await outcome(first.check('192.0.2.10', key('a'), auth.for(key('a')))),
      await outcome(second.check('192.0.2.10', key('b'), auth.for(key('b')))),
      await outcome(first.check('192.0.2.10', key('c'), auth.for(key('c')))),
    ],
    [401, 401, 429],
  );
  assert.equal(await outcome(second.check('192.0.2.10', key('d'), auth.for(key('d')))), 429);
  for (let attempt = 0; attempt < 2; attempt++)
    await outcome(first.check('192.0.2.11', key('shared', `wrong${attempt}`), auth.for(key('shared', `wrong${attempt}`))));
  assert.equal(await outcome(second.check('192.0.2.12', key('shared', 'wrong2'), auth.for(key('shared', 'wrong2')))), 429);
  const admin = new Redis(redisUrl);
  assert.deepEqual((await admin.keys(`${prefix}auth-failures:*`)).filter((name) => /192\.0\.2\.10|shared|73686172/.test(name)).sort(), [
    `${prefix}auth-failures:address:192.0.2.10`,
    `${prefix}auth-failures:key:${prefixOf(owned)}`,
  ]);
  await admin.quit();
});

test('without Redis each replica keeps limiting in memory with its share of the rate', async () => {
  const valid = key('valid');
  const { guard: limiter } = await guard({ url: 'redis://127.0.0.1:1', points: 6, replicas: 3, existing: [valid] });
  const auth = authenticator([valid]);
  assert.equal(await outcome(limiter.check('192.0.2.13', valid, auth.for(valid))), 200);
  const statuses = [];
  for (let attempt = 0; attempt < 4; attempt++) statuses.push(await outcome(limiter.check('192.0.2.13', key('guess'), auth.for(key('guess')))));
  assert.deepEqual(statuses, [401, 401, 429, 429]);
  assert.equal(await outcome(limiter.check('192.0.2.13', valid, auth.for(valid))), 200);
});
