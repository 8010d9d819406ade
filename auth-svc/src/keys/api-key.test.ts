import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { test } from 'node:test';
import { generateApiKey, hashSecret, isTestPrefix, parseApiKey, secretMatches } from './api-key.ts';

test('a generated key has the form nk_<16 hex>.<43 base64url characters>', () => {
  const key = generateApiKey();
  assert.match(key.apiKey, /^nk_[0-9a-f]{16}\.[A-Za-z0-9_-]{43}$/);
  assert.equal(key.apiKey, `${key.prefix}.${key.secret}`);
  assert.equal(Buffer.from(key.secret, 'base64url').length, 32);
});

test('a generated test key has the form nk_test_<16 hex>.<43 base64url characters> and parses back', () => {
  const key = generateApiKey({ test: true });
  assert.match(key.apiKey, /^nk_test_[0-9a-f]{16}\.[A-Za-z0-9_-]{43}$/);
  assert.deepEqual(parseApiKey(key.apiKey), { prefix: key.prefix, secret: key.secret });
  assert.equal(isTestPrefix(key.prefix), true);
  assert.equal(isTestPrefix(generateApiKey().prefix), false);
});

test('a test prefix is only the exact nk_test_ form', () => {
  const { secret } = generateApiKey();
  for (const malformed of [
    `nk_test${'a'.repeat(16)}.${secret}`,
    `nk_TEST_${'a'.repeat(16)}.${secret}`,
    `nk_test_${'a'.repeat(15)}.${secret}`,
    `nk_live_${'a'.repeat(16)}.${secret}`,
    `nk_test_test_${'a'.repeat(16)}.${secret}`,
  ]) {
    assert.equal(parseApiKey(malformed), undefined, malformed);
  }
});

test('two generated keys share neither prefix nor secret', () => {
  const first = generateApiKey();
  const second = generateApiKey();
  assert.notEqual(first.prefix, second.prefix);
  assert.notEqual(first.secret, second.secret);
});

test('a generated key parses back into its prefix and secret', () => {
  const key = generateApiKey();
  assert.deepEqual(parseApiKey(key.apiKey), { prefix: key.prefix, secret: key.secret });
});

test('anything not in the issued format is refused by the parser', () => {
  const { prefix, secret } = generateApiKey();
  const malformed = [
    '',
    prefix,
    `${prefix}.`,
    `.${secret}`,
    `${prefix}${secret}`,
    `${prefix.toUpperCase()}.${secret}`,
    `nk_${'g'.repeat(16)}.${secret}`,
    `nk_${'a'.repeat(15)}.${secret}`,
    `xk_${'a'.repeat(16)}.${secret}`,
    `${prefix}.${secret.slice(1)}`,
    `${prefix}.${secret}A`,
    `${prefix}.${secret.slice(1)}=`,
    `${prefix}.${secret.slice(1)}+`,
    ` ${prefix}.${secret}`,
    `${prefix}.${secret}\n`,
    `${prefix}.${secret.slice(0, 20)}.${secret.slice(21)}`,
    'x'.repeat(100_000),
  ];
  for (const candidate of malformed) assert.equal(parseApiKey(candidate), undefined, JSON.stringify(candidate.slice(0, 80)));
});

test('the stored hash is SHA-256 of the secret and only the right secret matches it', () => {
  const key = generateApiKey();
  assert.deepEqual(key.secretHash, createHash('sha256').update(key.secret).digest());
  assert.deepEqual(hashSecret(key.secret), key.secretHash);
  assert.equal(secretMatches(key.secret, key.secretHash), true);
  assert.equal(secretMatches(generateApiKey().secret, key.secretHash), false);
  assert.equal(secretMatches(key.secret, Buffer.alloc(16)), false);
});
