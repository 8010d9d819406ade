import assert from 'node:assert/strict';
import { test } from 'node:test';
import { canonicalJson, sendFingerprint } from './fingerprint.ts';

test('keys are sorted at every level and whitespace disappears', () => {
  const parsed = JSON.parse('{ "to": "a@b.co",\n "data": {"z": 1, "a": [ {"y": true, "b": null} ]}, "channel":"email" }') as unknown;
  assert.equal(canonicalJson(parsed), '{"channel":"email","data":{"a":[{"b":null,"y":true}],"z":1},"to":"a@b.co"}');
});

test('the same JSON in another key order or spacing has the same fingerprint', () => {
  const first = JSON.parse('{"template":"welcome","to":"a@b.co","channel":"email","data":{"name":"Ana","n":{"x":1,"y":2}}}') as unknown;
  const second = JSON.parse('{\n  "data": {"n": {"y": 2, "x": 1}, "name": "Ana"},\n  "channel": "email", "to": "a@b.co", "template": "welcome"\n}') as unknown;
  assert.equal(sendFingerprint(first, 7), sendFingerprint(second, 7));
  assert.match(sendFingerprint(first, 7), /^[0-9a-f]{64}$/);
});

test('another organization, array order or value gives another fingerprint', () => {
  const body = { template: 't', data: { list: [1, 2] } };
  assert.notEqual(sendFingerprint(body, 7), sendFingerprint(body, 8));
  assert.notEqual(sendFingerprint(body, 7), sendFingerprint({ template: 't', data: { list: [2, 1] } }, 7));
  assert.notEqual(sendFingerprint(body, 7), sendFingerprint({ template: 't', data: { list: ['1', 2] } }, 7));
});

test('a __proto__ key is serialized as data, not lost as a prototype', () => {
  const parsed = JSON.parse('{"b":1,"__proto__":{"x":1}}') as unknown;
  assert.equal(canonicalJson(parsed), '{"__proto__":{"x":1},"b":1}');
});

test('strings and numbers keep JSON escaping and shortest number form', () => {
  assert.equal(canonicalJson(JSON.parse('{"s":"line\\nquote\\"\\u00e9","n":1.50,"e":1e3}') as unknown), '{"e":1000,"n":1.5,"s":"line\\nquote\\"é"}');
});
