// HTTPS is told to browsers (Strict-Transport-Security) and relied on for cookies (Secure) only when the request came
// over TLS: on the socket, or per the X-Forwarded-Proto of a proxy TRUSTED_PROXY_HOPS declares. Served for real, with
// the panel; no request here reaches auth-svc or dispatch-svc, so nothing listens at their address.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { type ServedApp, serveApp } from '../testing/serve-app.ts';

const nowhere = '127.0.0.1:9';
const hsts = 'max-age=31536000; includeSubDomains';
/** A panel page, an API refusal (no key: 401 before any call), the API documentation and a probe. */
const paths = ['/panel/sign-in', '/api/v1/messages/', '/docs', '/healthz'];

let proxied: ServedApp;
let direct: ServedApp;
let forcedCookies: ServedApp;

before(async () => {
  [proxied, direct, forcedCookies] = await Promise.all([
    serveApp({ authAddress: nowhere, dispatchAddress: nowhere, panelEnv: {}, trustedProxyHops: 1 }),
    serveApp({ authAddress: nowhere, dispatchAddress: nowhere, panelEnv: {} }),
    serveApp({ authAddress: nowhere, dispatchAddress: nowhere, panelEnv: { PANEL_COOKIE_SECURE: 'true' } }),
  ]);
});

after(async () => {
  await Promise.all([proxied?.close(), direct?.close(), forcedCookies?.close()]);
});

async function visit(app: ServedApp, path: string, headers: Record<string, string> = {}): Promise<{ status: number; hsts: string | null; cookies: string[] }> {
  const response = await fetch(`${app.url}${path}`, { headers, redirect: 'manual' });
  await response.arrayBuffer();
  return { status: response.status, hsts: response.headers.get('strict-transport-security'), cookies: response.headers.getSetCookie() };
}

describe('Strict-Transport-Security and Secure cookies', () => {
  test('behind a trusted proxy that saw https, every response carries HSTS and the panel cookies are Secure', async () => {
    for (const path of paths) {
      const response = await visit(proxied, path, { 'x-forwarded-proto': 'https', 'x-forwarded-for': '203.0.113.9' });
      assert.equal(response.hsts, hsts, `${path} (${response.status})`);
    }
    const form = await visit(proxied, '/panel/sign-in', { 'x-forwarded-proto': 'https' });
    assert.equal(form.status, 200);
    assert.match(form.cookies[0] ?? '', /^notify_panel_sign_in=.*; secure; httponly$/);
  });

  test('behind a trusted proxy that saw plain http, no HSTS and no Secure cookie', async () => {
    for (const headers of [{}, { 'x-forwarded-proto': 'http' }] as Record<string, string>[]) {
      for (const path of paths) assert.equal((await visit(proxied, path, headers)).hsts, null, path);
      const form = await visit(proxied, '/panel/sign-in', headers);
      assert.match(form.cookies[0] ?? '', /^notify_panel_sign_in=/);
      assert.doesNotMatch(form.cookies[0] ?? '', /secure/);
    }
  });

  test("without trusted proxies X-Forwarded-Proto is the client's own claim: no HSTS, no Secure cookie", async () => {
    for (const path of paths) assert.equal((await visit(direct, path, { 'x-forwarded-proto': 'https' })).hsts, null, path);
    const form = await visit(direct, '/panel/sign-in', { 'x-forwarded-proto': 'https' });
    assert.match(form.cookies[0] ?? '', /^notify_panel_sign_in=/);
    assert.doesNotMatch(form.cookies[0] ?? '', /secure/);
  });

  test('PANEL_COOKIE_SECURE marks the cookies Secure over plain http, but HSTS still waits for https', async () => {
    const form = await visit(forcedCookies, '/panel/sign-in');
    assert.match(form.cookies[0] ?? '', /; secure; httponly$/);
    assert.equal(form.hsts, null);
  });
});
