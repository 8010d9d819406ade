import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { after, test } from 'node:test';
import { testEnvironment } from '@notify/test/harness/environment.ts';
import { silentLogger } from '@notify/test/harness/logger.ts';
import { Redis } from 'ioredis';
import { ApiError } from '../errors/api-error.ts';
import { rateLimitHeaders, throttled } from './headers.ts';
import { fallbackShare, SendRateLimiter } from './limiter.ts';
import { connectRedis } from './redis.ts';

const logger = silentLogger();
const redisUrl = testEnvironment.redisUrl;
const prefix = `notify-t-${randomBytes(4).toString('hex')}:`;
const clients: Redis[] = [];

function limiter(options: { url?: string; points?: number; windowSeconds?: number; replicas?: number } = {}): SendRateLimiter {
  const redis = connectRedis(options.url ?? redisUrl, logger);
  clients.push(redis);
  return new SendRateLimiter({
    redis,
    keyPrefix: prefix,
    defaultRate: { points: options.points ?? 3, windowSeconds: options.windowSeconds ?? 60 },
    replicas: options.replicas ?? 1,
    logger,
  });
}

const ready = (redis: Redis | undefined): Promise<unknown> =>
  new Promise((resolve) => (redis?.status === 'ready' ? resolve(null) : redis?.once('ready', resolve)));

after(async () => {
  const admin = new Redis(redisUrl);
  const keys = await admin.keys(`${prefix}*`);
  if (keys.length > 0) await admin.del(...keys);
  await admin.quit();
  for (const client of clients) client.disconnect();
});

test('requests within the rate are allowed and count down the remaining ones', async () => {
  const rateLimiter = limiter();
  await ready(clients.at(-1));
  const decisions = [];
  for (let i = 0; i < 4; i += 1) decisions.push(await rateLimiter.consume(101, ''));
  assert.deepEqual(
    decisions.map((decision) => [decision.allowed, decision.remaining]),
    [
      [true, 2],
      [true, 1],
      [true, 0],
      [false, 0],
    ],
  );
  for (const decision of decisions) assert.ok(decision.resetSeconds >= 1 && decision.resetSeconds <= 60);
});

test('the count is shared through Redis by every replica', async () => {
  const first = limiter();
  const second = limiter();
  await Promise.all([ready(clients.at(-1)), ready(clients.at(-2))]);
  assert.equal((await first.consume(102, '')).remaining, 2);
  assert.equal((await second.consume(102, '')).remaining, 1);
  const admin = new Redis(redisUrl);
  assert.deepEqual(await admin.keys(`${prefix}send-rate:3/60:102`), [`${prefix}send-rate:3/60:102`]);
  await admin.quit();
});

test('the read bucket is counted apart from the send bucket of the same key', async () => {
  const sends = limiter({ points: 1 });
  const redis = connectRedis(redisUrl, logger);
  clients.push(redis);
  const reads = new SendRateLimiter({ redis, keyPrefix: prefix, policy: 'read', defaultRate: { points: 1, windowSeconds: 60 }, replicas: 1, logger });
  await Promise.all([ready(clients.at(-1)), ready(clients.at(-2))]);
  assert.equal((await sends.consume(108, '')).allowed, true);
  const read = await reads.consume(108, '');
  assert.equal(read.allowed, true);
  assert.equal(read.policy, 'read');
  assert.equal((await reads.consume(108, '')).allowed, false);
  assert.equal((await sends.consume(108, '')).allowed, false);
});

test('keys are counted separately', async () => {
  const rateLimiter = limiter({ points: 1 });
  await ready(clients.at(-1));
  assert.equal((await rateLimiter.consume(103, '')).allowed, true);
  assert.equal((await rateLimiter.consume(103, '')).allowed, false);
  assert.equal((await rateLimiter.consume(104, '')).allowed, true);
});

test("a key's own rate overrides the default", async () => {
  const rateLimiter = limiter({ points: 100 });
  await ready(clients.at(-1));
  const decision = await rateLimiter.consume(105, '1/hour');
  assert.deepEqual(decision.rate, { points: 1, windowSeconds: 3_600 });
  assert.equal((await rateLimiter.consume(105, '1/hour')).allowed, false);
  assert.ok((await rateLimiter.consume(105, '1/hour')).resetSeconds > 3_500);
});

test('an unparsable key rate falls back to the default', async () => {
  const rateLimiter = limiter({ points: 7 });
  await ready(clients.at(-1));
  assert.deepEqual((await rateLimiter.consume(106, 'lots')).rate, { points: 7, windowSeconds: 60 });
});

test('without Redis each replica keeps serving with its share of the rate', async () => {
  const rateLimiter = limiter({ url: 'redis://127.0.0.1:1', points: 10, replicas: 3 });
  const allowed: boolean[] = [];
  for (let i = 0; i < 5; i += 1) allowed.push((await rateLimiter.consume(107, '')).allowed);
  assert.deepEqual(allowed, [true, true, true, false, false]);
  assert.equal(fallbackShare({ points: 10, windowSeconds: 60 }, 3), 3);
  assert.equal(fallbackShare({ points: 2, windowSeconds: 60 }, 5), 1);
});

test('the headers carry the policy, what remains and when the window resets', () => {
  const decision = { allowed: true, policy: 'send', rate: { points: 120, windowSeconds: 60 }, remaining: 119, resetSeconds: 60 };
  assert.deepEqual(rateLimitHeaders(decision), { 'RateLimit-Policy': '"send";q=120;w=60', RateLimit: '"send";r=119;t=60' });
  assert.deepEqual(rateLimitHeaders({ ...decision, policy: 'read', rate: { points: 600, windowSeconds: 60 }, remaining: 599 }), {
    'RateLimit-Policy': '"read";q=600;w=60',
    RateLimit: '"read";r=599;t=60',
  });
});

test('a throttled answer names the same whole seconds in Retry-After and in its text', () => {
  const refusal = throttled({ allowed: false, policy: 'send', rate: { points: 1, windowSeconds: 60 }, remaining: 0, resetSeconds: 42 });
  assert.ok(refusal instanceof ApiError);
  assert.equal(refusal.status, 429);
  assert.equal(refusal.code, undefined);
  assert.deepEqual(refusal.headers, { 'Retry-After': '42' });
  assert.deepEqual(refusal.detail, { key: 'throttled', params: { seconds: 42 } });
  assert.deepEqual(throttled({ allowed: false, policy: 'send', rate: { points: 1, windowSeconds: 1 }, remaining: 0, resetSeconds: 0 }).headers, {
    'Retry-After': '1',
  });
});

test('a batch takes as many points as the window has left, the rest given back, and refunds return points', async () => {
  const rateLimiter = limiter({ points: 10 });
  await ready(clients.at(-1));
  assert.equal((await rateLimiter.consume(120, '')).remaining, 9);
  const first = await rateLimiter.consumeUpTo(120, '', 6);
  assert.deepEqual([first.granted, first.decision.remaining, first.decision.allowed], [6, 3, true]);
  const second = await rateLimiter.consumeUpTo(120, '', 5);
  assert.deepEqual([second.granted, second.decision.remaining], [3, 0]);
  const none = await rateLimiter.consumeUpTo(120, '', 4);
  assert.deepEqual([none.granted, none.decision.remaining], [0, 0]);
  // Nothing over the limit stayed counted: two points given back are two sends allowed, and no more.
  await rateLimiter.refund(120, '', 2);
  assert.deepEqual(
    [(await rateLimiter.consume(120, '')).allowed, (await rateLimiter.consume(120, '')).allowed, (await rateLimiter.consume(120, '')).allowed],
    [true, true, false],
  );
});
