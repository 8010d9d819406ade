import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { ParameterizedContext } from 'koa';
import { safeNext } from '../routes/sign-in.ts';
import { sameSiteRequest, tokensMatch } from './csrf.ts';

function context(headers: Record<string, string>): ParameterizedContext {
  const lower = Object.fromEntries(Object.entries(headers).map(([name, value]) => [name.toLowerCase(), value]));
  return { get: (name: string) => lower[name.toLowerCase()] ?? '' } as unknown as ParameterizedContext;
}

test('a form token must match exactly, and a browser saying cross-site is refused', () => {
  assert.equal(tokensMatch('abc', 'abc'), true);
  for (const [presented, expected] of [
    ['abc', 'abd'],
    ['abc', 'abcd'],
    ['', ''],
    [undefined, 'abc'],
  ] as const)
    assert.equal(tokensMatch(presented, expected), false);
  assert.equal(sameSiteRequest(context({ 'Sec-Fetch-Site': 'same-origin' })), true);
  assert.equal(sameSiteRequest(context({})), true);
  assert.equal(sameSiteRequest(context({ 'Sec-Fetch-Site': 'cross-site' })), false);
  assert.equal(sameSiteRequest(context({ 'Sec-Fetch-Site': 'same-site' })), false);
});

test('after sign-in the browser only goes to a panel path of this site', () => {
  assert.equal(safeNext('/panel/projects/3/messages?state=failed'), '/panel/projects/3/messages?state=failed');
  for (const unsafe of ['https://evil.example/', '//evil.example/panel/', '/panel//evil.example', '/panel/\\evil', '/api/v1/send/', '', null])
    assert.equal(safeNext(unsafe), '/panel/', String(unsafe));
});
