// Against the machine's Redis, under a key prefix unique to the run (removed afterwards).
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { after, before, test } from 'node:test';
import { Redis } from 'ioredis';
import { testEnvironment } from '@notify/test/harness/environment.ts';
import { SignInLimiter } from './sign-in-limiter.ts';

const redisUrl = testEnvironment.redisUrl;
const keyPrefix = `notify-t-${randomBytes(4).toString('hex')}:`;
let redis: Redis;

before(() => {
  redis = new Redis(redisUrl);
});

after(async () => {
  const keys = await redis.keys(`${keyPrefix}*`);
  if (keys.length > 0) await redis.del(...keys);
  await redis.quit();
});

const limiter = (client: Redis) =>
  new SignInLimiter({ redis: client, keyPrefix, addressRate: { points: 3, windowSeconds: 60 }, accountRate: { points: 2, windowSeconds: 60 } });

test('every attempt from one address counts, whichever account it names', async () => {
  const signIns = limiter(redis);
  for (let attempt = 1; attempt <= 3; attempt += 1) assert.deepEqual(await signIns.attempt('192.0.2.1', `user${attempt}@example.com`), { allowed: true });
  const refused = await signIns.attempt('192.0.2.1', 'user4@example.com');
  assert.equal(refused.allowed, false);
  assert.ok(!refused.allowed && refused.retryAfterSeconds >= 1 && refused.retryAfterSeconds <= 60);
  assert.deepEqual(await signIns.attempt('192.0.2.2', 'user4@example.com'), { allowed: true });
});

test("an account's failures lock it from every address, and a success starts its count again", async () => {
  const signIns = limiter(redis);
  await signIns.failed('Target@Example.com');
  assert.deepEqual(await signIns.attempt('192.0.2.10', 'target@example.com'), { allowed: true });
  await signIns.succeeded('target@example.com');
  await signIns.failed('target@example.com');
  assert.deepEqual(await signIns.attempt('192.0.2.11', 'target@example.com'), { allowed: true }, 'one failure since the success');
  await signIns.failed('target@example.com');
  assert.equal((await signIns.attempt('192.0.2.12', ' TARGET@example.com')).allowed, false);
});

test('without Redis each replica keeps limiting in memory', async () => {
  const unreachable = new Redis('redis://127.0.0.1:1', { enableOfflineQueue: false, maxRetriesPerRequest: 0, lazyConnect: true, retryStrategy: () => null });
  unreachable.on('error', () => undefined);
  const signIns = limiter(unreachable);
  for (let attempt = 1; attempt <= 3; attempt += 1) assert.equal((await signIns.attempt('192.0.2.20', 'x@example.com')).allowed, true);
  assert.equal((await signIns.attempt('192.0.2.20', 'x@example.com')).allowed, false);
  unreachable.disconnect();
});
