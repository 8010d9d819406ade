import assert from 'node:assert/strict';
import { test } from 'node:test';
import { AuthorizationCache, apiKeyPrefix, cacheKey } from './authorization-cache.ts';

const keyA = `nk_${'a'.repeat(16)}.${'A'.repeat(43)}`;
const keyB = `nk_${'b'.repeat(16)}.${'B'.repeat(43)}`;
const prefixA = `nk_${'a'.repeat(16)}`;
const prefixB = `nk_${'b'.repeat(16)}`;

function liveCache(options: { ttlMs?: number; maxEntries?: number } = {}) {
  const clock = { now: 1_000 };
  const cache = new AuthorizationCache<string>({ ttlMs: options.ttlMs ?? 10_000, maxEntries: options.maxEntries ?? 100, now: () => clock.now });
  cache.resume();
  const put = (apiKey: string, organizationId: number, value = `${apiKey}@${organizationId}`) =>
    cache.set(cacheKey(apiKey, organizationId), apiKeyPrefix(apiKey) ?? '', value, cache.ticket());
  const get = (apiKey: string, organizationId: number) => cache.get(cacheKey(apiKey, organizationId));
  return { cache, clock, put, get };
}

test('the prefix is taken from keys in the issued form only', () => {
  assert.equal(apiKeyPrefix(keyA), prefixA);
  assert.equal(apiKeyPrefix('nk_0123456789abcdef.anything'), 'nk_0123456789abcdef');
  for (const other of ['nk_0123456789ABCDEF.secret', 'nk_0123.secret', 'nk_0123456789abcdef', 'xk_0123456789abcdef.secret', '']) {
    assert.equal(apiKeyPrefix(other), undefined, other);
  }
});

test('the cache key is a digest of key and organization: neither can be read from it', () => {
  const key = cacheKey(keyA, 7);
  assert.match(key, /^[A-Za-z0-9_-]{43}$/, 'SHA-256 in base64url');
  assert.ok(!key.includes(prefixA) && !key.includes('A'.repeat(8)));
  assert.notEqual(cacheKey(keyA, 8), key, 'another organization, another entry');
  assert.notEqual(cacheKey(`${keyA}x`, 7), key, 'the whole key counts');
});

test('an accepted answer is a hit until its time to live has passed, then a miss', () => {
  const { cache, clock, put, get } = liveCache();
  assert.equal(get(keyA, 7), undefined);
  put(keyA, 7, 'accepted');
  clock.now += 9_999;
  assert.equal(get(keyA, 7), 'accepted');
  assert.equal(get(keyA, 8), undefined, 'only for the organization it was asked for');
  clock.now += 1;
  assert.equal(get(keyA, 7), undefined);
  assert.equal(cache.size, 0);
});

test('a hit does not extend the time to live: auth-svc is asked again at least once per TTL', () => {
  const { clock, put, get } = liveCache({ ttlMs: 1_000 });
  put(keyA, 7);
  for (let step = 0; step < 3; step++) {
    clock.now += 300;
    assert.ok(get(keyA, 7));
  }
  clock.now += 100;
  assert.equal(get(keyA, 7), undefined);
});

test('beyond its bound the least recently used entry goes', () => {
  const { cache, put, get } = liveCache({ maxEntries: 2 });
  put(keyA, 1);
  put(keyA, 2);
  assert.ok(get(keyA, 1)); // now the most recently used
  put(keyB, 3);
  assert.equal(cache.size, 2);
  assert.equal(get(keyA, 2), undefined);
  assert.ok(get(keyA, 1));
  assert.ok(get(keyB, 3));
});

test('invalidating a prefix drops the key for every organization it was cached for, and leaves other keys', () => {
  const { cache, put, get } = liveCache();
  put(keyA, 1);
  put(keyA, 2);
  put(keyB, 1);
  cache.invalidatePrefix(prefixA);
  assert.equal(get(keyA, 1), undefined);
  assert.equal(get(keyA, 2), undefined);
  assert.ok(get(keyB, 1));
  assert.equal(cache.size, 1);
  // An evicted entry leaves no trace in the index: invalidating its prefix later is harmless.
  cache.invalidatePrefix(prefixA);
  assert.ok(get(keyB, 1));
});

test('clear drops every entry', () => {
  const { cache, put, get } = liveCache();
  put(keyA, 1);
  put(keyB, 2);
  cache.clear();
  assert.equal(cache.size, 0);
  assert.equal(get(keyA, 1), undefined);
  assert.equal(get(keyB, 2), undefined);
});

test('an answer asked for before an invalidation is not stored after it', () => {
  const { cache, get } = liveCache();
  for (const invalidate of [() => cache.invalidatePrefix(prefixA), () => cache.invalidatePrefix(prefixB), () => cache.clear()]) {
    const ticket = cache.ticket(); // the Authorize call starts
    invalidate(); // the key is revoked (or any key, or a plan changed) while it runs
    cache.set(cacheKey(keyA, 1), prefixA, 'stale', ticket);
    assert.equal(get(keyA, 1), undefined);
  }
  cache.set(cacheKey(keyA, 1), prefixA, 'fresh', cache.ticket());
  assert.equal(get(keyA, 1), 'fresh');
});

test('nothing is stored or served before resume, after pause, or with a TTL of 0', () => {
  const paused = new AuthorizationCache<string>({ ttlMs: 10_000, maxEntries: 10 });
  assert.equal(paused.live, false, 'starts paused: the invalidation subscription is not confirmed yet');
  paused.set(cacheKey(keyA, 1), prefixA, 'early', paused.ticket());
  assert.equal(paused.size, 0);

  const { cache, put, get } = liveCache();
  put(keyA, 1);
  const ticket = cache.ticket();
  cache.pause();
  assert.equal(cache.live, false);
  assert.equal(get(keyA, 1), undefined, 'dropped on pause');
  put(keyA, 1);
  assert.equal(cache.size, 0);
  cache.resume();
  cache.set(cacheKey(keyA, 1), prefixA, 'asked for before the pause', ticket);
  assert.equal(cache.size, 0, 'an answer from before the pause is not trusted after it');
  put(keyA, 1);
  assert.ok(get(keyA, 1));

  const disabled = new AuthorizationCache<string>({ ttlMs: 0, maxEntries: 10 });
  disabled.resume();
  disabled.set(cacheKey(keyA, 1), prefixA, 'value', disabled.ticket());
  assert.equal(disabled.size, 0);
});
