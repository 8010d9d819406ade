import assert from 'node:assert/strict';
import { test } from 'node:test';
import { maxApiKeyLength, parseAuthorization } from './authorization-header.ts';

test('an Api-Key credential yields the key', () => {
  assert.deepEqual(parseAuthorization('Api-Key nk_3f9a.s3cr3t-Value_x'), { ok: true, apiKey: 'nk_3f9a.s3cr3t-Value_x' });
  assert.deepEqual(parseAuthorization('Api-Key   spaced.key'), { ok: true, apiKey: 'spaced.key' });
  assert.deepEqual(parseAuthorization('Api-Key base64+/key=='), { ok: true, apiKey: 'base64+/key==' });
});

test('a missing or empty header says the credentials were not provided', () => {
  assert.deepEqual(parseAuthorization(undefined), { ok: false, reason: 'auth.missing' });
  assert.deepEqual(parseAuthorization(''), { ok: false, reason: 'auth.missing' });
  assert.deepEqual(parseAuthorization('   '), { ok: false, reason: 'auth.missing' });
});

test('another scheme, a misspelt scheme or a bare key is refused for its form', () => {
  for (const header of [
    'Bearer abc.def',
    'Basic dXNlcjpwYXNz',
    'api-key abc.def',
    'API-KEY abc.def',
    'ApiKey abc.def',
    'abc.def',
    'Api-Key',
    'Api-Key ',
    'Api-Keyabc.def',
    'Api-Key\tabc.def',
  ]) {
    assert.deepEqual(parseAuthorization(header), { ok: false, reason: 'auth.scheme' }, header);
  }
});

test('a malformed key is refused without asking auth-svc', () => {
  for (const header of [
    'Api-Key abc def',
    'Api-Key abc.def,ghi',
    'Api-Key ключ',
    'Api-Key a=b',
    'Api-Key "abc"',
    `Api-Key ${'k'.repeat(maxApiKeyLength + 1)}`,
  ]) {
    assert.deepEqual(parseAuthorization(header), { ok: false, reason: 'auth.invalid' }, header);
  }
  assert.equal(parseAuthorization(`Api-Key ${'k'.repeat(maxApiKeyLength)}`).ok, true);
});
