// Against the machine's Redis, under a key prefix unique to the run (removed afterwards).
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { after, before, test } from 'node:test';
import { testEnvironment } from '@notify/test/harness/environment.ts';
import { Redis } from 'ioredis';
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

test("an account's attempts lock it from every address, and a success starts its count again", async () => {
  const signIns = limiter(redis);
  assert.deepEqual(await signIns.attempt('192.0.2.10', 'Target@Example.com'), { allowed: true });
  await signIns.succeeded('target@example.com');
  assert.deepEqual(await signIns.attempt('192.0.2.11', 'target@example.com'), { allowed: true });
  assert.deepEqual(await signIns.attempt('192.0.2.12', 'target@example.com'), { allowed: true }, 'two attempts since the success');
  assert.equal((await signIns.attempt('192.0.2.13', ' TARGET@example.com')).allowed, false);
});

test('30 concurrent attempts on one account: no more than its limit are let through to the password check', async () => {
  const signIns = limiter(redis);
  const decisions = await Promise.all(Array.from({ length: 30 }, (_, index) => signIns.attempt(`192.0.2.${100 + index}`, 'raced@example.com')));
  assert.equal(decisions.filter((decision) => decision.allowed).length, 2);
});

test('an attempt that could not be judged gives its account point back', async () => {
  const signIns = limiter(redis);
  assert.equal((await signIns.attempt('192.0.2.30', 'unjudged@example.com')).allowed, true);
  await signIns.notJudged('unjudged@example.com');
  assert.equal((await signIns.attempt('192.0.2.31', 'unjudged@example.com')).allowed, true);
  assert.equal((await signIns.attempt('192.0.2.32', 'unjudged@example.com')).allowed, true);
  assert.equal((await signIns.attempt('192.0.2.33', 'unjudged@example.com')).allowed, false);
});

test('IPv6 clients are counted by their /64', async () => {
  const signIns = limiter(redis);
  for (const address of ['2001:db8:5:6::1', '2001:db8:5:6:a:b:c:d', '2001:0db8:0005:0006:ffff::1'])
    assert.equal((await signIns.attempt(address, `${address}@example.com`)).allowed, true);
  assert.equal((await signIns.attempt('2001:db8:5:6:9::9', 'v6-last@example.com')).allowed, false, 'the fourth address of the same /64');
  assert.equal((await signIns.attempt('2001:db8:5:7::1', 'v6-last@example.com')).allowed, true, 'the next /64 is another client');
});

test('without Redis each replica keeps limiting in memory', async () => {
  const unreachable = new Redis('redis://127.0.0.1:1', { enableOfflineQueue: false, maxRetriesPerRequest: 0, lazyConnect: true, retryStrategy: () => null });
  unreachable.on('error', () => undefined);
  const signIns = limiter(unreachable);
  for (let attempt = 1; attempt <= 3; attempt += 1) assert.equal((await signIns.attempt('192.0.2.20', `x${attempt}@example.com`)).allowed, true);
  assert.equal((await signIns.attempt('192.0.2.20', 'x4@example.com')).allowed, false);
  unreachable.disconnect();
});
