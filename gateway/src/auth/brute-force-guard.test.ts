import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { Writable } from 'node:stream';
import { after, test } from 'node:test';
import { Redis } from 'ioredis';
import { createLogger } from '@notify/platform';
import { ApiError } from '../errors/api-error.ts';
import { text } from '../i18n/messages.ts';
import { connectRedis } from '../rate-limit/redis.ts';
import { BruteForceGuard } from './brute-force-guard.ts';
import { notAuthenticated } from './authorize.ts';

const lines: Array<Record<string, unknown>> = [];
const logger = createLogger('test', 'warn', new Writable({ write: (chunk: Buffer, _encoding, done) => (lines.push(JSON.parse(chunk.toString('utf8')) as Record<string, unknown>), done()) }));
const redisUrl = process.env['TEST_REDIS_URL'] ?? 'redis://127.0.0.1:6379';
const prefix = `notify-t-${randomBytes(4).toString('hex')}:`;
const clients: Redis[] = [];

after(async () => {
  const admin = new Redis(redisUrl);
  const keys = await admin.keys(`${prefix}*`);
  if (keys.length > 0) await admin.del(...keys);
  await admin.quit();
  for (const client of clients) client.disconnect();
});

async function guard(options: { url?: string; points?: number; windowSeconds?: number; replicas?: number } = {}): Promise<BruteForceGuard> {
  const redis = connectRedis(options.url ?? redisUrl, logger);
  clients.push(redis);
  await new Promise((resolve) => redis.once('ready', resolve).once('error', resolve));
  return new BruteForceGuard({ redis, keyPrefix: prefix, rate: { points: options.points ?? 3, windowSeconds: options.windowSeconds ?? 60 }, replicas: options.replicas ?? 1, logger });
}

/** A stand-in for checks 2-4: the keys it accepts, and how many credentials it was asked to judge. */
function authenticator(valid: readonly string[]) {
  const asked: Array<string | undefined> = [];
  return {
    asked,
    for(apiKey: string | undefined) {
      return async (): Promise<string> => {
        asked.push(apiKey);
        if (apiKey === undefined || !valid.includes(apiKey)) throw notAuthenticated('auth.invalid');
        return `access for ${apiKey}`;
      };
    },
  };
}

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

test('failures up to the limit stay 401; the one past it and every later guess are 429, without being judged', async () => {
  const limiter = await guard();
  const auth = authenticator([]);
  const statuses = [];
  for (let attempt = 0; attempt < 6; attempt++) statuses.push(await outcome(limiter.check('192.0.2.1', `guess-${attempt}`, auth.for(`guess-${attempt}`))));
  assert.deepEqual(statuses, [401, 401, 401, 429, 429, 429]);
  assert.deepEqual(auth.asked, ['guess-0', 'guess-1', 'guess-2', 'guess-3'], 'a blocked address costs no more lookups');
  const refusal = await limiter.check('192.0.2.1', 'guess', auth.for('guess')).catch((error: unknown) => error);
  assert.ok(refusal instanceof ApiError);
  assert.equal(refusal.code, undefined, 'the body is {detail} alone, like the contract 429');
  const seconds = Number(refusal.headers['Retry-After']);
  assert.ok(seconds >= 1 && seconds <= 60, `Retry-After ${seconds}`);
  assert.deepEqual(refusal.detail, text('throttled', { seconds }));
  assert.equal(lines.filter((line) => line['address'] === '192.0.2.1').length, 1, 'one warning per blocked window');
});

test('a malformed key, which auth-svc is never asked about, counts as a failure too', async () => {
  const limiter = await guard({ points: 2 });
  const auth = authenticator([]);
  const statuses = [];
  for (let attempt = 0; attempt < 3; attempt++) statuses.push(await outcome(limiter.check('192.0.2.2', undefined, auth.for(undefined))));
  assert.deepEqual(statuses, [401, 401, 429]);
});

test('a key accepted before keeps working from a blocked address, and other addresses are not blocked', async () => {
  const limiter = await guard({ points: 2 });
  const auth = authenticator(['valid-key']);
  assert.equal(await outcome(limiter.check('192.0.2.3', 'valid-key', auth.for('valid-key'))), 200);
  for (let attempt = 0; attempt < 3; attempt++) await outcome(limiter.check('192.0.2.3', 'guess', auth.for('guess')));
  assert.equal(await outcome(limiter.check('192.0.2.3', 'guess', auth.for('guess'))), 429);
  assert.equal(await limiter.check('192.0.2.3', 'valid-key', auth.for('valid-key')), 'access for valid-key');
  assert.equal(await outcome(limiter.check('192.0.2.4', 'guess', auth.for('guess'))), 401, 'another address');
});

test('a valid key this replica has not seen accepted waits out the block with everyone else at that address', async () => {
  const limiter = await guard({ points: 1, windowSeconds: 1 });
  const auth = authenticator(['fresh-key']);
  for (let attempt = 0; attempt < 2; attempt++) await outcome(limiter.check('192.0.2.5', 'guess', auth.for('guess')));
  assert.equal(await outcome(limiter.check('192.0.2.5', 'fresh-key', auth.for('fresh-key'))), 429);
  assert.equal(auth.asked.includes('fresh-key'), false);
  await new Promise((resolve) => setTimeout(resolve, 1_100));
  assert.equal(await outcome(limiter.check('192.0.2.5', 'fresh-key', auth.for('fresh-key'))), 200, 'the window ended');
});

test('a known key refused since (revoked) no longer passes a blocked address, and its refusal counts', async () => {
  const limiter = await guard({ points: 1 });
  const valid = ['doomed-key'];
  const auth = authenticator(valid);
  assert.equal(await outcome(limiter.check('192.0.2.6', 'doomed-key', auth.for('doomed-key'))), 200);
  valid.pop();
  assert.deepEqual([await outcome(limiter.check('192.0.2.6', 'doomed-key', auth.for('doomed-key'))), await outcome(limiter.check('192.0.2.6', 'doomed-key', auth.for('doomed-key')))], [401, 429]);
  assert.equal(await outcome(limiter.check('192.0.2.6', 'doomed-key', auth.for('doomed-key'))), 429);
  assert.equal(auth.asked.length, 3);
});

test('only 401s count: a valid key with a bad organization (400, 403) or a dependency down (503) is no failure', async () => {
  const limiter = await guard({ points: 1 });
  const refusals = [
    new ApiError(400, 'invalid_header', text('organization.invalid')),
    new ApiError(403, 'permission_denied', text('permission_denied')),
    new ApiError(503, 'service_unavailable', text('service_unavailable')),
  ];
  for (let round = 0; round < 2; round++) {
    for (const refusal of refusals) {
      assert.equal(await outcome(limiter.check('192.0.2.7', 'some-key', () => Promise.reject(refusal))), refusal.status);
    }
  }
  const guesses = [];
  for (let attempt = 0; attempt < 2; attempt++) guesses.push(await outcome(limiter.check('192.0.2.7', 'guess', authenticator([]).for('guess'))));
  assert.deepEqual(guesses, [401, 429], 'the first real failure is still within the limit');
  // auth-svc accepted the key (400 and 403 come after that): it passes the address now that it is blocked.
  assert.equal(await outcome(limiter.check('192.0.2.7', 'some-key', async () => 'ok')), 200);
});

test('every address of one IPv6 /64 shares a count, as does an IPv4 client seen through a dual-stack socket', async () => {
  const limiter = await guard({ points: 2 });
  const auth = authenticator([]);
  const statuses = [];
  for (const address of ['2001:db8:1:2::1', '2001:db8:1:2::2', '2001:db8:1:2:ffff::3']) statuses.push(await outcome(limiter.check(address, 'guess', auth.for('guess'))));
  assert.deepEqual(statuses, [401, 401, 429]);
  await outcome(limiter.check('::ffff:192.0.2.8', 'guess', auth.for('guess')));
  await outcome(limiter.check('192.0.2.8', 'guess', auth.for('guess')));
  assert.equal(await outcome(limiter.check('::ffff:192.0.2.8', 'guess', auth.for('guess'))), 429);
});

test('the count is shared by every replica through Redis, under the key prefix', async () => {
  const first = await guard({ points: 2 });
  const second = await guard({ points: 2 });
  const auth = authenticator([]);
  assert.deepEqual(
    [await outcome(first.check('192.0.2.9', 'a', auth.for('a'))), await outcome(second.check('192.0.2.9', 'b', auth.for('b'))), await outcome(first.check('192.0.2.9', 'c', auth.for('c')))],
    [401, 401, 429],
  );
  assert.equal(await outcome(second.check('192.0.2.9', 'd', auth.for('d'))), 429);
  const admin = new Redis(redisUrl);
  assert.deepEqual(await admin.keys(`${prefix}auth-failures:192.0.2.9`), [`${prefix}auth-failures:192.0.2.9`]);
  await admin.quit();
});

test('without Redis each replica keeps limiting in memory with its share of the rate', async () => {
  const limiter = await guard({ url: 'redis://127.0.0.1:1', points: 6, replicas: 3 });
  const auth = authenticator(['valid-key']);
  assert.equal(await outcome(limiter.check('192.0.2.10', 'valid-key', auth.for('valid-key'))), 200);
  const statuses = [];
  for (let attempt = 0; attempt < 4; attempt++) statuses.push(await outcome(limiter.check('192.0.2.10', 'guess', auth.for('guess'))));
  assert.deepEqual(statuses, [401, 401, 429, 429]);
  assert.equal(await outcome(limiter.check('192.0.2.10', 'valid-key', auth.for('valid-key'))), 200);
});
