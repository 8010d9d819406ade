import assert from 'node:assert/strict';
import { test } from 'node:test';
import { ExpiringCache } from './expiring-cache.ts';

function clockedCache(options: { ttlMs?: number; maxEntries?: number } = {}) {
  const clock = { now: 1_000 };
  const cache = new ExpiringCache<string | null>({ ttlMs: options.ttlMs ?? 10_000, maxEntries: options.maxEntries ?? 100, now: () => clock.now });
  return { cache, clock };
}

test('a stored value is served until its time to live has passed', () => {
  const { cache, clock } = clockedCache();
  cache.set('nk_a', 'record', cache.ticket());
  clock.now += 9_999;
  assert.equal(cache.get('nk_a'), 'record');
  clock.now += 1;
  assert.equal(cache.get('nk_a'), undefined);
  assert.equal(cache.size, 0);
});

test('a value its source says lives less than the TTL is served that long; one said to live longer, the TTL only', () => {
  const { cache, clock } = clockedCache();
  cache.set('short', 'short', cache.ticket(), 2_000);
  cache.set('long', 'long', cache.ticket(), 60_000);
  cache.set('gone', 'gone', cache.ticket(), 0);
  assert.equal(cache.get('gone'), undefined);
  clock.now += 1_999;
  assert.equal(cache.get('short'), 'short');
  clock.now += 1;
  assert.equal(cache.get('short'), undefined);
  clock.now += 8_000;
  assert.equal(cache.get('long'), undefined);
});

test('null is a value: a key known to match nothing is cached as a negative entry', () => {
  const { cache } = clockedCache();
  assert.equal(cache.get('nk_unknown'), undefined);
  cache.set('nk_unknown', null, cache.ticket());
  assert.strictEqual(cache.get('nk_unknown'), null);
});

test('beyond its bound the cache drops the least recently used entry', () => {
  const { cache } = clockedCache({ maxEntries: 3 });
  for (const prefix of ['nk_1', 'nk_2', 'nk_3']) cache.set(prefix, prefix, cache.ticket());
  cache.get('nk_1'); // now the most recently used
  cache.set('nk_4', 'nk_4', cache.ticket());
  assert.equal(cache.size, 3);
  assert.equal(cache.get('nk_2'), undefined);
  assert.equal(cache.get('nk_1'), 'nk_1');
  assert.equal(cache.get('nk_3'), 'nk_3');
  assert.equal(cache.get('nk_4'), 'nk_4');
});

test('invalidating a key drops it and leaves the others', () => {
  const { cache } = clockedCache();
  cache.set('nk_a', 'a', cache.ticket());
  cache.set('nk_b', 'b', cache.ticket());
  cache.invalidate('nk_a');
  assert.equal(cache.get('nk_a'), undefined);
  assert.equal(cache.get('nk_b'), 'b');
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
  assert.equal(cache.get('nk_a'), 'fresh');
});

test('a time to live of zero disables caching', () => {
  const { cache } = clockedCache({ ttlMs: 0 });
  cache.set('nk_a', 'a', cache.ticket());
  assert.equal(cache.get('nk_a'), undefined);
});

test('a hit does not extend the time to live: the source is asked again at least once per TTL', () => {
  const { cache, clock } = clockedCache({ ttlMs: 1_000 });
  cache.set('nk_a', 'a', cache.ticket());
  for (let step = 0; step < 3; step++) {
    clock.now += 300;
    assert.equal(cache.get('nk_a'), 'a');
  }
  clock.now += 100;
  assert.equal(cache.get('nk_a'), undefined);
});

test('lookup tells how long a stored value has left, and nothing once it expired', () => {
  const { cache, clock } = clockedCache();
  assert.equal(cache.lookup('nk_a'), undefined);
  cache.set('nk_a', 'record', cache.ticket());
  clock.now += 7_500;
  assert.deepEqual(cache.lookup('nk_a'), { value: 'record', remainingMs: 2_500 });
  clock.now += 2_500;
  assert.equal(cache.lookup('nk_a'), undefined);
});
