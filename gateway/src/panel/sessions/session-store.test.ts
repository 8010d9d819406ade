// Against the machine's Redis, under a key prefix unique to the run (removed afterwards).
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { after, before, test } from 'node:test';
import { OperationalError } from '@notify/platform';
import { testEnvironment } from '@notify/test/harness/environment.ts';
import { Redis } from 'ioredis';
import { SessionStore } from './session-store.ts';

const redisUrl = testEnvironment.redisUrl;
const keyPrefix = `notify-t-${randomBytes(4).toString('hex')}:`;
let redis: Redis;
const user = { userId: 7, organizationId: 3, passwordChangedAt: '2026-01-31T09:00:00.000Z' };

before(() => {
  redis = new Redis(redisUrl);
});

after(async () => {
  const keys = await redis.keys(`${keyPrefix}*`);
  if (keys.length > 0) await redis.del(...keys);
  await redis.quit();
});

test('a session is read back by its id, and Redis holds only a hash of that id', async () => {
  const store = new SessionStore({ redis, keyPrefix, idleMs: 60_000, lifetimeMs: 3_600_000 });
  const { id, session } = await store.create(user);
  assert.match(id, /^[A-Za-z0-9_-]{43}$/);
  assert.notEqual(session.csrfToken, id);
  assert.deepEqual(await store.read(id), session);
  const keys = await redis.keys(`${keyPrefix}*`);
  assert.ok(keys.length > 0 && keys.every((key) => !key.includes(id)), 'the id itself is not a key');
  assert.equal(await store.read(`${id.slice(0, -1)}x`), undefined);
  assert.equal(await store.read('not a session id'), undefined);
});

test('signing out ends a session at once', async () => {
  const store = new SessionStore({ redis, keyPrefix, idleMs: 60_000, lifetimeMs: 3_600_000 });
  const { id } = await store.create(user);
  await store.destroy(id);
  assert.equal(await store.read(id), undefined);
});

test('a session ends when unused for the idle timeout, and after its lifetime however used', async () => {
  // Steps well inside the idle timeout, and four of them well past it: a loaded machine's pauses stay inside a step.
  const idle = new SessionStore({ redis, keyPrefix, idleMs: 1_000, lifetimeMs: 3_600_000 });
  const kept = await idle.create(user);
  const dropped = await idle.create(user);
  for (let step = 0; step < 4; step += 1) {
    await new Promise((resolve) => setTimeout(resolve, 400));
    assert.ok(await idle.read(kept.id), 'each use restarts the idle timeout');
  }
  assert.equal(await idle.read(dropped.id), undefined);

  const store = new SessionStore({ redis, keyPrefix, idleMs: 60_000, lifetimeMs: 1_000 });
  const { id, session } = await store.create(user, Date.now());
  assert.ok(await store.read(id, session.createdAt + 999));
  assert.equal(await store.read(id, session.createdAt + 1_000), undefined);
  assert.equal(await store.read(id, session.createdAt), undefined, 'an expired session is deleted, not just refused');
});

test('without Redis a session cannot be read, and that is a dependency failure, not a signed-out visitor', async () => {
  const unreachable = new Redis('redis://127.0.0.1:1', { enableOfflineQueue: false, maxRetriesPerRequest: 0, lazyConnect: true, retryStrategy: () => null });
  unreachable.on('error', () => undefined);
  const store = new SessionStore({ redis: unreachable, keyPrefix, idleMs: 60_000, lifetimeMs: 3_600_000 });
  await assert.rejects(store.read('a'.repeat(43)), OperationalError);
  unreachable.disconnect();
});
