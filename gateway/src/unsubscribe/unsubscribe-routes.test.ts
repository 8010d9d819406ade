// /u/TOKEN through the gateway's real ReportService client and a real Redis limiter, against a stand-in of
// ReportService that verifies tokens as dispatch-svc does (signed with a data key, platform/src/mail).
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { after, before, describe, test } from 'node:test';
import { status } from '@grpc/grpc-js';
import { type GrpcServer, UserError } from '@notify/platform';
import { createDataKey, readUnsubscribeToken, unsubscribeToken } from '@notify/platform/mail';
import { dispatchProto } from '@notify/proto';
import { gatewayCaller, type ServedApp, serveApp } from '../testing/serve-app.ts';
import { standIn, standInServer } from '../testing/stand-in.ts';

const dataKey = createDataKey(randomBytes(32));
const token = (address: string, messageId = 7): string => unsubscribeToken(dataKey, { projectId: 3, messageId, address });
const suppressed = new Set<string>();
const calls: Array<{ source: string; dryRun: boolean }> = [];

let services: GrpcServer;
let gateway: ServedApp;

before(async () => {
  services = standInServer();
  services.add(
    dispatchProto.ReportService.service,
    standIn(dispatchProto.ReportService.service, {
      async Unsubscribe(request) {
        calls.push({ source: request.source, dryRun: request.dryRun });
        const claim = readUnsubscribeToken(dataKey, request.token);
        if (!claim) throw new UserError(status.INVALID_ARGUMENT, 'invalid_token', 'the unsubscribe link is not valid');
        const maskedAddress = `${claim.address[0]}***${claim.address.slice(claim.address.indexOf('@'))}`;
        if (request.dryRun) return { maskedAddress, suppressed: suppressed.has(claim.address), changed: false };
        const changed = !suppressed.has(claim.address);
        suppressed.add(claim.address);
        return { maskedAddress, suppressed: true, changed };
      },
    }),
    [gatewayCaller],
  );
  const port = await services.listen(0, '127.0.0.1');
  const address = `127.0.0.1:${port}`;
  gateway = await serveApp({ authAddress: address, dispatchAddress: address, unsubscribeRate: { points: 1_000, windowSeconds: 60 } });
});

after(async () => {
  await gateway?.close();
  await services?.close(1_000);
});

const oneClick = (path: string, init: RequestInit = {}): Promise<Response> =>
  fetch(`${gateway.url}${path}`, {
    method: 'POST',
    headers: { 'Content-Type': 'application/x-www-form-urlencoded' },
    body: 'List-Unsubscribe=One-Click',
    redirect: 'manual',
    ...init,
  });

function assertPageHeaders(response: Response): void {
  assert.match(response.headers.get('content-type') ?? '', /^text\/html; charset=utf-8/);
  assert.match(response.headers.get('content-security-policy') ?? '', /default-src 'none'/);
  assert.match(response.headers.get('content-security-policy') ?? '', /frame-ancestors 'none'/);
  assert.equal(response.headers.get('x-frame-options'), 'DENY');
  assert.equal(response.headers.get('x-content-type-options'), 'nosniff');
  assert.equal(response.headers.get('referrer-policy'), 'no-referrer');
  assert.equal(response.headers.get('cache-control'), 'no-store');
  assert.ok(response.headers.get('x-request-id'));
  assert.equal(response.headers.get('set-cookie'), null, 'no cookie is ever set');
}

describe('POST /u/TOKEN (RFC 8058 one click)', () => {
  test('unsubscribes with List-Unsubscribe=One-Click, without cookies or CSRF token, and answers the same the second time', async () => {
    const link = `/u/${token('one@example.com')}`;
    const first = await oneClick(link);
    assert.equal(first.status, 200);
    assertPageHeaders(first);
    assert.match(await first.text(), /You are unsubscribed/);
    assert.ok(suppressed.has('one@example.com'));
    assert.deepEqual(calls.at(-1), { source: 'one_click', dryRun: false });
    const second = await oneClick(link);
    assert.equal(second.status, 200);
    assert.match(await second.text(), /You are unsubscribed/);
  });

  test('accepts the body as multipart/form-data too', async () => {
    const form = new FormData();
    form.set('List-Unsubscribe', 'One-Click');
    const response = await fetch(`${gateway.url}/u/${token('multi@example.com')}`, { method: 'POST', body: form });
    assert.equal(response.status, 200);
    assert.ok(suppressed.has('multi@example.com'));
  });

  test('a POST without List-Unsubscribe=One-Click is 400 and unsubscribes no one', async () => {
    const before = calls.length;
    const response = await oneClick(`/u/${token('nobody@example.com')}`, { body: 'List-Unsubscribe=Maybe' });
    assert.equal(response.status, 400);
    const json = await oneClick(`/u/${token('nobody@example.com')}`, {
      headers: { 'Content-Type': 'application/json' },
      body: '{"List-Unsubscribe":"One-Click"}',
    });
    assert.equal(json.status, 400);
    assert.equal(calls.length, before);
    assert.ok(!suppressed.has('nobody@example.com'));
  });

  test('a token that does not verify gets the 404 page, in Spanish when asked', async () => {
    const forged = unsubscribeToken(createDataKey(randomBytes(32)), { projectId: 3, messageId: 7, address: 'x@example.com' });
    const response = await oneClick(`/u/${forged}`, { headers: { 'Content-Type': 'application/x-www-form-urlencoded', 'Accept-Language': 'es' } });
    assert.equal(response.status, 404);
    assertPageHeaders(response);
    assert.equal(response.headers.get('content-language'), 'es');
    assert.match(await response.text(), /Enlace no válido/);
    const malformed = await oneClick('/u/not%20a%20token');
    assert.equal(malformed.status, 404);
  });
});

describe('GET /u/TOKEN (the confirmation page)', () => {
  test('shows the masked address and a form that posts, and unsubscribes no one by itself', async () => {
    const link = `/u/${token('reader@example.com')}`;
    const response = await fetch(`${gateway.url}${link}`);
    assert.equal(response.status, 200);
    assertPageHeaders(response);
    const body = await response.text();
    assert.match(body, /r\*\*\*@example\.com/);
    assert.ok(body.includes(`<form method="post" action="${link}">`));
    assert.match(body, /name="List-Unsubscribe" value="One-Click"/);
    assert.ok(!suppressed.has('reader@example.com'), 'a GET never unsubscribes');
    assert.deepEqual(calls.at(-1), { source: 'page', dryRun: true });
    // The page's button: the same POST, said to come from the page.
    const posted = await oneClick(link, { body: 'List-Unsubscribe=One-Click&from=page' });
    assert.equal(posted.status, 200);
    assert.deepEqual(calls.at(-1), { source: 'page', dryRun: false });
    assert.match(await (await fetch(`${gateway.url}${link}`)).text(), /already unsubscribed/);
  });

  test('is in Spanish when Accept-Language prefers it', async () => {
    const response = await fetch(`${gateway.url}/u/${token('lector@example.com')}`, { headers: { 'Accept-Language': 'es-ES, en;q=0.5' } });
    assert.equal(response.headers.get('content-language'), 'es');
    const body = await response.text();
    assert.match(body, /<html lang="es">/);
    assert.match(body, /Darme de baja/);
  });

  test('a token that does not verify gets the 404 page', async () => {
    const response = await fetch(`${gateway.url}/u/${token('x@example.com').slice(0, -3)}AAA`);
    assert.equal(response.status, 404);
    assert.match(await response.text(), /not valid/);
  });
});

test('503 with Retry-After when dispatch-svc does not answer', async () => {
  const down = await serveApp({
    authAddress: '127.0.0.1:1',
    dispatchAddress: '127.0.0.1:1',
    unsubscribeRate: { points: 100, windowSeconds: 60 },
    deadlineMs: 500,
  });
  try {
    const link = `${down.url}/u/${token('a@example.com')}`;
    const page = await fetch(link);
    const posted = await fetch(link, { method: 'POST', headers: { 'Content-Type': 'application/x-www-form-urlencoded' }, body: 'List-Unsubscribe=One-Click' });
    for (const response of [page, posted]) {
      assert.equal(response.status, 503);
      assert.equal(response.headers.get('retry-after'), '5');
      assert.match(await response.text(), /try again/i);
    }
  } finally {
    await down.close();
  }
});

test('requests beyond the rate per client address are 429 with Retry-After', async () => {
  const limited = await serveApp({ authAddress: '127.0.0.1:1', dispatchAddress: '127.0.0.1:1', unsubscribeRate: { points: 2, windowSeconds: 60 } });
  try {
    const statuses: number[] = [];
    let last: Response | undefined;
    for (let i = 0; i < 3; i += 1) {
      last = await fetch(`${limited.url}/u/not-a-token!`);
      statuses.push(last.status);
    }
    assert.deepEqual(statuses, [404, 404, 429]);
    assert.ok(Number(last?.headers.get('retry-after')) >= 1);
  } finally {
    await limited.close();
  }
});

test('the access log names the route of an unsubscribe link, never its token (which opens to the address)', async () => {
  const link = token('logged@example.com', 11);
  await fetch(`${gateway.url}/u/${link}`);
  await oneClick(`/u/${link}`);
  await oneClick('/u/not-a-token');
  // The access line is written when the response has left: wait for the three.
  const deadline = Date.now() + 2_000;
  const accessLines = () => gateway.logs.filter((line) => line.msg === 'request' && String(line.path).startsWith('/u/'));
  while (accessLines().length < 3 && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 20));
  const lines = accessLines();
  assert.ok(lines.length >= 3, `access lines: ${JSON.stringify(lines)}`);
  for (const line of lines) assert.equal(line.path, '/u/:token');
  const everything = JSON.stringify(gateway.logs);
  assert.ok(!everything.includes(link), 'the token appears nowhere in the logs');
  assert.ok(!everything.includes('logged@example.com'), 'nor does the address');
});
