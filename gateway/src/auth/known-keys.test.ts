import assert from 'node:assert/strict';
import { test } from 'node:test';
import { KnownKeys } from './known-keys.ts';

test('a key is known once accepted, until it is refused', () => {
  const keys = new KnownKeys({ ttlMs: 60_000, maxEntries: 10 });
  assert.equal(keys.has('nk_a.secret'), false);
  keys.accepted('nk_a.secret');
  assert.equal(keys.has('nk_a.secret'), true);
  assert.equal(keys.has('nk_a.secreT'), false, 'only the exact key');
  keys.refused('nk_a.secret');
  assert.equal(keys.has('nk_a.secret'), false);
});

test('a key not accepted again within the time to live is forgotten', () => {
  let now = 1_000;
  const keys = new KnownKeys({ ttlMs: 500, maxEntries: 10, now: () => now });
  keys.accepted('nk_a.secret');
  now += 400;
  keys.accepted('nk_a.secret');
  now += 400;
  assert.equal(keys.has('nk_a.secret'), true, 'each acceptance starts the time again');
  now += 100;
  assert.equal(keys.has('nk_a.secret'), false);
  assert.equal(keys.size, 0);
});

test('beyond its bound the key accepted longest ago goes first', () => {
  const keys = new KnownKeys({ ttlMs: 60_000, maxEntries: 2 });
  keys.accepted('first');
  keys.accepted('second');
  keys.accepted('first');
  keys.accepted('third');
  assert.deepEqual([keys.has('first'), keys.has('second'), keys.has('third')], [true, false, true]);
  assert.equal(keys.size, 2);
});
