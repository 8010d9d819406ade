import assert from 'node:assert/strict';
import { test } from 'node:test';
import { apiKeyPrefix, requestDigest } from './authorization-cache.ts';

const keyA = `nk_${'a'.repeat(16)}.${'A'.repeat(43)}`;
const prefixA = `nk_${'a'.repeat(16)}`;

test('the prefix is taken from keys in the issued form only', () => {
  assert.equal(apiKeyPrefix(keyA), prefixA);
  assert.equal(apiKeyPrefix('nk_0123456789abcdef.anything'), 'nk_0123456789abcdef');
  assert.equal(apiKeyPrefix('nk_test_0123456789abcdef.anything'), 'nk_test_0123456789abcdef');
  for (const other of ['nk_0123456789ABCDEF.secret', 'nk_0123.secret', 'nk_0123456789abcdef', 'xk_0123456789abcdef.secret', '']) {
    assert.equal(apiKeyPrefix(other), undefined, other);
  }
});

test('an entry is checked by a digest of key and organization: neither can be read from it', () => {
  const key = requestDigest(keyA, 7);
  assert.match(key, /^[A-Za-z0-9_-]{43}$/, 'SHA-256 in base64url');
  assert.ok(!key.includes(prefixA) && !key.includes('A'.repeat(8)));
  assert.notEqual(requestDigest(keyA, 8), key, 'another organization, another entry');
  assert.notEqual(requestDigest(`${keyA}x`, 7), key, 'the whole key counts');
});
