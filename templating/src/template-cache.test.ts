import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { LruCache } from './template-cache.ts';

describe('LRU cache', () => {
  it('never holds more than its bound, dropping the least recently used entry', () => {
    const cache = new LruCache<string, number>(2);
    cache.set('a', 1);
    cache.set('b', 2);
    assert.equal(cache.get('a'), 1);
    cache.set('c', 3);
    assert.equal(cache.size, 2);
    assert.equal(cache.get('b'), undefined);
    assert.equal(cache.get('a'), 1);
    assert.equal(cache.get('c'), 3);
  });

  it('replaces the value of an existing key without growing', () => {
    const cache = new LruCache<string, number>(2);
    cache.set('a', 1);
    cache.set('a', 2);
    assert.equal(cache.size, 1);
    assert.equal(cache.get('a'), 2);
  });

  it('refuses a bound below one', () => {
    assert.throws(() => new LruCache(0), RangeError);
  });
});
