import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { ParameterizedContext } from 'koa';
import { safeNext } from '../routes/sign-in.ts';
import { cameOverHttps, clientAddress } from './client.ts';
import { sameSiteRequest, tokensMatch } from './csrf.ts';

function context(headers: Record<string, string>, remoteAddress = '10.0.0.5', encrypted = false): ParameterizedContext {
  const lower = Object.fromEntries(Object.entries(headers).map(([name, value]) => [name.toLowerCase(), value]));
  return { get: (name: string) => lower[name.toLowerCase()] ?? '', req: { socket: { remoteAddress, encrypted } } } as unknown as ParameterizedContext;
}

test('forwarded headers are believed only behind the trusted proxy, and only its own X-Forwarded-For entry', () => {
  const forwarded = context({ 'X-Forwarded-For': '6.6.6.6, 203.0.113.9', 'X-Forwarded-Proto': 'https' });
  assert.equal(clientAddress(forwarded, { trustProxy: false }), '10.0.0.5');
  assert.equal(clientAddress(forwarded, { trustProxy: true }), '203.0.113.9');
  assert.equal(cameOverHttps(forwarded, { trustProxy: false }), false);
  assert.equal(cameOverHttps(forwarded, { trustProxy: true }), true);
  assert.equal(cameOverHttps(context({}, '10.0.0.5', true), { trustProxy: false }), true);
});

test('a form token must match exactly, and a browser saying cross-site is refused', () => {
  assert.equal(tokensMatch('abc', 'abc'), true);
  for (const [presented, expected] of [['abc', 'abd'], ['abc', 'abcd'], ['', ''], [undefined, 'abc']] as const) assert.equal(tokensMatch(presented, expected), false);
  assert.equal(sameSiteRequest(context({ 'Sec-Fetch-Site': 'same-origin' })), true);
  assert.equal(sameSiteRequest(context({})), true);
  assert.equal(sameSiteRequest(context({ 'Sec-Fetch-Site': 'cross-site' })), false);
  assert.equal(sameSiteRequest(context({ 'Sec-Fetch-Site': 'same-site' })), false);
});

test('after sign-in the browser only goes to a panel path of this site', () => {
  assert.equal(safeNext('/panel/projects/3/messages?state=failed'), '/panel/projects/3/messages?state=failed');
  for (const unsafe of ['https://evil.example/', '//evil.example/panel/', '/panel//evil.example', '/panel/\\evil', '/api/v1/send/', '', null]) assert.equal(safeNext(unsafe), '/panel/', String(unsafe));
});
