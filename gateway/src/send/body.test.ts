import assert from 'node:assert/strict';
import { test } from 'node:test';
import { ApiError } from '../errors/api-error.ts';
import { ensureJsonBody, isJsonMediaType, parseJsonObject } from './body.ts';

const refusedWith = (status: number, code: string, key: string) => (error: unknown) =>
  error instanceof ApiError && error.status === status && error.code === code && error.detail.key === key;

test('application/json is accepted in any case and with a UTF-8 charset', () => {
  for (const header of [
    'application/json',
    'Application/JSON',
    'application/json; charset=utf-8',
    'application/json;charset=UTF-8',
    'application/json; charset="utf-8"',
    'application/json ; foo=bar',
  ]) {
    assert.equal(isJsonMediaType(header), true, header);
  }
});

test('other media types and other charsets are not JSON', () => {
  for (const header of [
    undefined,
    '',
    'text/plain',
    'application/x-www-form-urlencoded',
    'application/jsonp',
    'application/json-patch+json',
    'multipart/form-data',
    'application/json; charset=latin1',
    'application/json; charset=utf-16',
  ]) {
    assert.equal(isJsonMediaType(header), false, String(header));
  }
});

test('a compressed body is refused as an unsupported media type', () => {
  assert.throws(() => ensureJsonBody('application/json', 'gzip'), refusedWith(415, 'unsupported_media_type', 'media_type.encoding'));
  assert.throws(() => ensureJsonBody('text/plain', undefined), refusedWith(415, 'unsupported_media_type', 'media_type.json'));
  assert.doesNotThrow(() => ensureJsonBody('application/json', 'identity'));
});

test('a JSON object is parsed', () => {
  assert.deepEqual(parseJsonObject(Buffer.from('{"a": [1, {"b": null}]}')), { a: [1, { b: null }] });
});

test('bytes that are not UTF-8 are a parse error', () => {
  assert.throws(() => parseJsonObject(Buffer.from([0x7b, 0x22, 0xff, 0x22, 0x3a, 0x31, 0x7d])), refusedWith(400, 'parse_error', 'parse.utf8'));
  assert.throws(() => parseJsonObject(Buffer.from('{"a":"\xe9"}', 'latin1')), refusedWith(400, 'parse_error', 'parse.utf8'));
});

test('malformed JSON is a parse error', () => {
  for (const source of ['', '{', '{"a":1,}', "{'a':1}", '{"a":1}{"b":2}', 'NaN']) {
    assert.throws(() => parseJsonObject(Buffer.from(source)), refusedWith(400, 'parse_error', 'parse.json'), source);
  }
});

test('JSON that is not an object is a parse error', () => {
  for (const source of ['[]', '[{"template":"x"}]', 'null', '"text"', '42', 'true']) {
    assert.throws(() => parseJsonObject(Buffer.from(source)), refusedWith(400, 'parse_error', 'parse.object'), source);
  }
});

test('a __proto__ key is an own property and leaves the prototype alone', () => {
  const parsed = parseJsonObject(Buffer.from('{"__proto__": {"polluted": true}}'));
  assert.equal(Object.getPrototypeOf(parsed), Object.prototype);
  assert.deepEqual(Object.keys(parsed), ['__proto__']);
  assert.equal(({} as Record<string, unknown>).polluted, undefined);
});

test('a body nested far deeper than the call stack is parsed without overflowing', () => {
  const depth = 100_000;
  const parsed = parseJsonObject(Buffer.from(`{"data":${'['.repeat(depth)}${']'.repeat(depth)}}`));
  assert.ok(Array.isArray(parsed.data));
});
