import assert from 'node:assert/strict';
import { test } from 'node:test';
import { KeyCache } from './key-cache.ts';

function clockedCache(options: { ttlMs?: number; maxEntries?: number } = {}) {
  const clock = { now: 1_000 };
  const cache = new KeyCache<string>({ ttlMs: options.ttlMs ?? 10_000, maxEntries: options.maxEntries ?? 100, now: () => clock.now });
  return { cache, clock };
}

test('a cached lookup is served until its time to live has passed', () => {
  const { cache, clock } = clockedCache();
  cache.set('nk_a', 'record', cache.ticket());
  clock.now += 9_999;
  assert.deepEqual(cache.get('nk_a'), { value: 'record' });
  clock.now += 1;
  assert.equal(cache.get('nk_a'), undefined);
  assert.equal(cache.size, 0);
});

test('a prefix known to match nothing is cached as a negative entry', () => {
  const { cache } = clockedCache();
  assert.equal(cache.get('nk_unknown'), undefined);
  cache.set('nk_unknown', null, cache.ticket());
  assert.deepEqual(cache.get('nk_unknown'), { value: null });
});

test('beyond its bound the cache drops the least recently used entry', () => {
  const { cache } = clockedCache({ maxEntries: 3 });
  for (const prefix of ['nk_1', 'nk_2', 'nk_3']) cache.set(prefix, prefix, cache.ticket());
  cache.get('nk_1'); // now the most recently used
  cache.set('nk_4', 'nk_4', cache.ticket());
  assert.equal(cache.size, 3);
  assert.equal(cache.get('nk_2'), undefined);
  assert.deepEqual(cache.get('nk_1'), { value: 'nk_1' });
  assert.deepEqual(cache.get('nk_3'), { value: 'nk_3' });
  assert.deepEqual(cache.get('nk_4'), { value: 'nk_4' });
});

test('invalidating a prefix drops it and leaves the others', () => {
  const { cache } = clockedCache();
  cache.set('nk_a', 'a', cache.ticket());
  cache.set('nk_b', 'b', cache.ticket());
  cache.invalidate('nk_a');
  assert.equal(cache.get('nk_a'), undefined);
  assert.deepEqual(cache.get('nk_b'), { value: 'b' });
  cache.clear();
  assert.equal(cache.get('nk_b'), undefined);
});

test('a lookup that started before an invalidation is not cached', () => {
  const { cache } = clockedCache();
  const beforeRevocation = cache.ticket();
  cache.invalidate('nk_a');
  cache.set('nk_a', 'stale record read before the revocation', beforeRevocation);
  assert.equal(cache.get('nk_a'), undefined);

  const beforeClear = cache.ticket();
  cache.clear();
  cache.set('nk_b', 'stale plan', beforeClear);
  assert.equal(cache.get('nk_b'), undefined);

  cache.set('nk_a', 'fresh', cache.ticket());
  assert.deepEqual(cache.get('nk_a'), { value: 'fresh' });
});

test('a time to live of zero disables caching', () => {
  const { cache } = clockedCache({ ttlMs: 0 });
  cache.set('nk_a', 'a', cache.ticket());
  assert.equal(cache.get('nk_a'), undefined);
});
