// docs/contract.md "Order of checks" rows 1, 7 and 8 and "Errors in general" against the running services: 413 before the body is read,
// 415 and 400 parse_error, 503 while auth-svc or dispatch-svc is down (never a 500, never internals), X-Request-ID and
// Cache-Control on every response, unknown routes and methods, and the health and metrics surfaces.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import {
  assertAccepted,
  assertCoded,
  assertEveryResponseHeaders,
  assertFieldErrors,
  assertUnauthenticated,
  uuidPattern,
  writtenRows,
} from '../../harness/contract-shapes.ts';
import { type RawResult, rawExchange, rawRequest } from '../../harness/raw-http.ts';
import { type HttpResult, type System, startSystem, type Tenant } from '../../harness/system.ts';
import { anotherKey, validBody } from '../../harness/tenants.ts';
import { assertTranslated, languageHeader } from '../../harness/translation.ts';
import { waitFor } from '../../harness/wait.ts';

/** NOTIFY_MAX_BODY_BYTES left at its default: the contract's 256 KiB. */
const maxBodyBytes = 262_144;
let system: System;
let tenant: Tenant;
const body = validBody('welcome');

before(async () => {
  system = await startSystem();
  tenant = await system.createTenant('edges');
  await system.putTemplate(tenant.projectId, 'welcome');
});

after(async () => {
  await system?.stop();
});

function sendHeaders(key: Tenant, extra: ReadonlyArray<readonly [string, string]> = []): Array<readonly [string, string]> {
  return [['Authorization', `Api-Key ${key.apiKey}`], ['X-Organization-ID', String(key.organizationId)], ...extra];
}

/** A valid body padded (in `data`) to exactly `size` bytes of JSON. */
function bodyOfSize(size: number): Buffer {
  const empty = Buffer.byteLength(JSON.stringify(validBody('welcome', { data: { pad: '' } })));
  return Buffer.from(JSON.stringify(validBody('welcome', { data: { pad: 'x'.repeat(size - empty) } })));
}

function assertNoInternals(response: HttpResult): void {
  assert.doesNotMatch(response.text, /127\.0\.0\.1|localhost|:\d{4,5}\b|\bat [\w.<]+ \(|Error:|ECONN|grpc|stack/i, `internals in ${response.text}`);
}

test('413 payload_too_large comes from Content-Length before any body byte is sent, ahead of every other check', async () => {
  const before = await writtenRows(system.db);
  for (const headers of [
    // Nothing else is valid: the size is judged first.
    [['Content-Type', 'text/plain']] as const,
    sendHeaders(tenant, [['Content-Type', 'application/json']]),
  ]) {
    const response = await rawRequest(system.gatewayUrl, {
      path: '/api/v1/send/',
      headers: [...headers, ['Content-Length', String(maxBodyBytes + 1)], ['X-Request-ID', 'too-large-1']],
      withholdBody: true,
      timeoutMs: 5_000,
    });
    assertCoded(response, 413, 'payload_too_large');
    assert.ok(response.elapsedMs < 3_000, `answered after ${Math.round(response.elapsedMs)} ms without a byte of the body`);
    assertEveryResponseHeaders(response, 'too-large-1');
    assert.equal(response.headers.get('ratelimit'), null, 'not counted: it never reached the rate check');
  }
  assert.deepEqual(await writtenRows(system.db), before);
});

test('a body of exactly NOTIFY_MAX_BODY_BYTES (256 KiB by default) is read; one byte more is refused, chunked too', async () => {
  const key = await anotherKey(system, tenant, 'size');
  const exact = await rawRequest(system.gatewayUrl, {
    path: '/api/v1/send/',
    headers: sendHeaders(key, [['Content-Type', 'application/json']]),
    body: bodyOfSize(maxBodyBytes),
  });
  assertAccepted(exact);
  const over = await rawRequest(system.gatewayUrl, {
    path: '/api/v1/send/',
    headers: sendHeaders(key, [['Content-Type', 'application/json']]),
    body: bodyOfSize(maxBodyBytes + 1),
  });
  assertCoded(over, 413, 'payload_too_large');
  // Without a Content-Length the size is only known while reading: reading stops at the limit.
  const chunked = await rawRequest(system.gatewayUrl, {
    path: '/api/v1/send/',
    headers: sendHeaders(key, [
      ['Content-Type', 'application/json'],
      ['Transfer-Encoding', 'chunked'],
    ]),
    body: bodyOfSize(maxBodyBytes + 1),
  });
  assertCoded(chunked, 413, 'payload_too_large');
  assertEveryResponseHeaders(chunked);
});

test('415 unsupported_media_type unless the body is declared application/json; a UTF-8 charset and any case are accepted', async () => {
  const key = await anotherKey(system, tenant, 'media-type');
  const payload = Buffer.from(JSON.stringify(body));
  const refused: Record<string, string | undefined> = {
    'text/plain': 'text/plain',
    'no Content-Type': undefined,
    'application/xml': 'application/xml',
    'a JSON-based type': 'application/merge-patch+json',
    'form data': 'application/x-www-form-urlencoded',
    'a charset other than UTF-8': 'application/json; charset=iso-8859-1',
  };
  const before = await writtenRows(system.db);
  for (const [label, contentType] of Object.entries(refused)) {
    const response = await rawRequest(system.gatewayUrl, {
      path: '/api/v1/send/',
      headers: sendHeaders(key, contentType === undefined ? [] : [['Content-Type', contentType]]),
      body: payload,
    });
    assert.equal(response.status, 415, `${label}: ${response.text}`);
    assertCoded(response, 415, 'unsupported_media_type');
    assert.match(response.headers.get('ratelimit') ?? '', /^"send";r=\d+;t=\d+$/, `${label}: a 415 is counted`);
    // NOTIFY_PUBLIC_SEND_RATE is not set for this system: its default is 120 per minute.
    assert.equal(response.headers.get('ratelimit-policy'), '"send";q=120;w=60', label);
  }
  assert.deepEqual(await writtenRows(system.db), before);
  for (const contentType of ['application/json; charset=utf-8', 'application/json;charset=UTF-8', 'Application/JSON']) {
    const response = await rawRequest(system.gatewayUrl, { path: '/api/v1/send/', headers: sendHeaders(key, [['Content-Type', contentType]]), body: payload });
    assert.equal(response.status, 202, `${contentType}: ${response.text}`);
  }
});

test('400 parse_error for a body that is not well-formed UTF-8 JSON holding an object', async () => {
  const key = await anotherKey(system, tenant, 'parse');
  const bodies: Record<string, Buffer> = {
    'malformed JSON': Buffer.from('{"template": "welcome",'),
    'an empty body': Buffer.alloc(0),
    'an array': Buffer.from(JSON.stringify([body])),
    'a string': Buffer.from('"welcome"'),
    null: Buffer.from('null'),
    'a number': Buffer.from('42'),
    'a boolean': Buffer.from('true'),
    'two objects': Buffer.from('{}{}'),
    'trailing garbage': Buffer.from(`${JSON.stringify(body)} x`),
    'invalid UTF-8 in a string': Buffer.concat([
      Buffer.from('{"template":"welcome","to":"a@example.com","channel":"email","data":{"name":"'),
      Buffer.from([0xff, 0xfe]),
      Buffer.from('"}}'),
    ]),
    'an overlong UTF-8 encoding': Buffer.concat([Buffer.from('{"template":"'), Buffer.from([0xc0, 0xaf]), Buffer.from('"}')]),
    'a lone surrogate encoded in UTF-8': Buffer.concat([Buffer.from('{"template":"'), Buffer.from([0xed, 0xa0, 0x80]), Buffer.from('"}')]),
  };
  const before = await writtenRows(system.db);
  for (const [label, bytes] of Object.entries(bodies)) {
    const response = await rawRequest(system.gatewayUrl, {
      path: '/api/v1/send/',
      headers: sendHeaders(key, [['Content-Type', 'application/json']]),
      body: bytes,
    });
    assert.equal(response.status, 400, `${label}: ${response.text}`);
    assertCoded(response, 400, 'parse_error');
    assertEveryResponseHeaders(response);
  }
  assert.deepEqual(await writtenRows(system.db), before);
});

async function assertUnavailable(response: HttpResult, requestId: string): Promise<void> {
  assertCoded(response, 503, 'service_unavailable');
  assert.equal(response.body.request_id, requestId);
  assertEveryResponseHeaders(response, requestId);
  assert.match(response.headers.get('retry-after') ?? '', /^[1-9]\d*$/, 'Retry-After in whole seconds');
  assertNoInternals(response);
}

async function restartAndRecover(service: 'auth-svc' | 'dispatch-svc'): Promise<void> {
  await system.stack.restart(service);
  // The gateway's gRPC channel reconnects with its own backoff: wait for a send to go through again.
  await waitFor(async () => ((await system.send(tenant, body)).status === 202 ? true : undefined), {
    timeoutMs: 20_000,
    intervalMs: 250,
    what: `sends to work again after ${service} restarted`,
  });
  // So does this test's own admin client of that service, which later tests call.
  const admin = service === 'auth-svc' ? system.authAdmin : system.templates;
  await waitFor(async () => ((await admin.serving().catch(() => false)) ? true : undefined), {
    timeoutMs: 20_000,
    intervalMs: 250,
    what: `this test's client to reach ${service} again`,
  });
}

test('503 service_unavailable with Retry-After and the request id while auth-svc is down, never a 500 or an internal detail', async () => {
  system.stack.kill('auth-svc', 'SIGKILL');
  await system.stack.exited('auth-svc');
  try {
    const response = await system.send(tenant, body, { 'x-request-id': 'auth-down-1' });
    await assertUnavailable(response, 'auth-down-1');
    await assertTranslated('503 with auth-svc down', (acceptLanguage) => system.send(tenant, body, languageHeader(acceptLanguage)));
    // A key cannot be judged without auth-svc, so an unknown one is 503 too, never 401 or 500...
    await assertUnavailable(
      await system.send({ ...tenant, apiKey: 'nk_0123456789abcdef.AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA' }, body, { 'x-request-id': 'auth-down-2' }),
      'auth-down-2',
    );
    // ...while what the gateway judges alone is still answered: a missing credential, a too large body.
    assertUnauthenticated(
      await system.request('/api/v1/send/', { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) }),
    );
    const ready = await system.request('/readyz', { method: 'GET' });
    assert.equal(ready.status, 503, `readyz while auth-svc is down: ${ready.text}`);
    assertNoInternals(ready);
  } finally {
    await restartAndRecover('auth-svc');
  }
});

test('503 service_unavailable with Retry-After and the request id while dispatch-svc is down; what the gateway judges alone is still answered', async () => {
  const before = await writtenRows(system.db);
  system.stack.kill('dispatch-svc', 'SIGKILL');
  await system.stack.exited('dispatch-svc');
  try {
    await assertUnavailable(await system.send(tenant, body, { 'x-request-id': 'dispatch-down-1' }), 'dispatch-down-1');
    await assertTranslated('503 with dispatch-svc down', (acceptLanguage) => system.send(tenant, body, languageHeader(acceptLanguage)));
    assertFieldErrors(await system.send(tenant, { ...body, channel: 'sms' }), ['channel']);
    assertCoded(await system.send(tenant, '[]'), 400, 'parse_error');
  } finally {
    await restartAndRecover('dispatch-svc');
  }
  const afterRecovery = await writtenRows(system.db);
  assert.equal(afterRecovery.messages, before.messages + 1, 'only the send after recovery wrote a message');
});

test('X-Request-ID is echoed when sane and replaced by a new UUID when not', async () => {
  const key = await anotherKey(system, tenant, 'request-id');
  const sane = ['abc-123_X.y', 'r'.repeat(128), '0', 'f47ac10b-58cc-4372-a567-0e02b2c3d479'];
  const insane = ['r'.repeat(129), 'has space', 'café', 'a/b', 'a:b', '<script>', 'ünïcode', '', '"quoted"'];
  for (const requestId of [...sane, ...insane]) {
    const response = await rawRequest(system.gatewayUrl, {
      path: '/api/v1/send/',
      headers: sendHeaders(key, [
        ['Content-Type', 'application/json'],
        ['X-Request-ID', requestId],
      ]),
      // A refused body: this is about the header, and keeps the key's budget and the database untouched.
      body: Buffer.from(JSON.stringify({ ...body, channel: 'sms' })),
    });
    assert.equal(response.status, 422, response.text);
    const echoed = response.headers.get('x-request-id') ?? '';
    if (sane.includes(requestId)) assert.equal(echoed, requestId);
    else assert.match(echoed, uuidPattern, `${JSON.stringify(requestId)} was replaced by ${echoed}`);
  }
  // Two different refused ids get two different new ones.
  const first = await system.send(key, { ...body, channel: 'sms' }, { 'x-request-id': 'not sane' });
  const second = await system.send(key, { ...body, channel: 'sms' }, { 'x-request-id': 'not sane' });
  assert.notEqual(first.headers.get('x-request-id'), second.headers.get('x-request-id'));
});

test('every kind of response carries X-Request-ID and Cache-Control: no-store', async () => {
  const key = await anotherKey(system, tenant, 'every-response');
  const post = (path: string, headers: ReadonlyArray<readonly [string, string]>, payload: string | Buffer = JSON.stringify(body)): Promise<RawResult> =>
    rawRequest(system.gatewayUrl, { path, headers: [...headers, ['X-Request-ID', 'every-1']], body: Buffer.from(payload) });
  const json = sendHeaders(key, [['Content-Type', 'application/json']]);
  const get = (path: string): Promise<RawResult> => rawRequest(system.gatewayUrl, { method: 'GET', path, headers: [['X-Request-ID', 'every-1']] });
  const responses: Array<[label: string, status: number, response: RawResult]> = [
    ['accepted', 202, await post('/api/v1/send/', json)],
    ['no credential', 401, await post('/api/v1/send/', [['Content-Type', 'application/json']])],
    [
      'no organization',
      400,
      await post('/api/v1/send/', [
        ['Authorization', `Api-Key ${key.apiKey}`],
        ['Content-Type', 'application/json'],
      ]),
    ],
    [
      'a foreign organization',
      403,
      await post('/api/v1/send/', [
        ['Authorization', `Api-Key ${key.apiKey}`],
        ['X-Organization-ID', '987654321'],
        ['Content-Type', 'application/json'],
      ]),
    ],
    ['an unknown template', 404, await post('/api/v1/send/', json, JSON.stringify(validBody('no-such-template')))],
    ['an unknown route', 404, await post('/api/v1/nothing', json)],
    ['another method', 405, await get('/api/v1/send/')],
    [
      'too large',
      413,
      await rawRequest(system.gatewayUrl, {
        path: '/api/v1/send/',
        headers: [
          ['Content-Length', String(maxBodyBytes + 1)],
          ['X-Request-ID', 'every-1'],
        ],
        withholdBody: true,
      }),
    ],
    ['not JSON', 415, await post('/api/v1/send/', sendHeaders(key, [['Content-Type', 'text/plain']]))],
    ['malformed JSON', 400, await post('/api/v1/send/', json, '{')],
    ['no fields', 422, await post('/api/v1/send/', json, '{}')],
    ['healthz', 200, await get('/healthz')],
    ['readyz', 200, await get('/readyz')],
  ];
  for (const [label, status, response] of responses) {
    assert.equal(response.status, status, `${label}: ${response.status} ${response.text}`);
    assertEveryResponseHeaders(response, 'every-1');
  }
});

test("requests the HTTP parser refuses still get the contract's headers and a {detail, code} body", async () => {
  const requests: Record<string, [string, number]> = {
    'a header name with a space': ['POST /api/v1/send/ HTTP/1.1\r\nHost: gateway\r\nBad Header: 1\r\nContent-Length: 0\r\n\r\n', 400],
    'Content-Length with Transfer-Encoding': [
      'POST /api/v1/send/ HTTP/1.1\r\nHost: gateway\r\nContent-Length: 2\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n',
      400,
    ],
    'no Host header': ['POST /api/v1/send/ HTTP/1.1\r\nContent-Length: 0\r\n\r\n', 400],
    'headers over 16 KiB': [`POST /api/v1/send/ HTTP/1.1\r\nHost: gateway\r\nX-Padding: ${'p'.repeat(20_000)}\r\nContent-Length: 0\r\n\r\n`, 431],
  };
  for (const [label, [bytes, status]] of Object.entries(requests)) {
    const response = await rawExchange(system.gatewayUrl, bytes);
    assert.equal(response.status, status, `${label}: ${response.status}`);
    assertEveryResponseHeaders(response);
    assert.deepEqual(Object.keys(response.body).sort(), ['code', 'detail'], `${label}: ${JSON.stringify(response.text)}`);
  }
});

test('an unknown route is 404 not_found, another method on the send route 405 with Allow, and the path works without its slash', async () => {
  for (const path of ['/api/v1/sent/', '/api/v2/send/', '/', '/api/v1/send/extra', '/api/v1/send//']) {
    const response = await system.request(path, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{}' });
    assertCoded(response, 404, 'not_found');
    assertEveryResponseHeaders(response);
  }
  for (const method of ['GET', 'PUT', 'DELETE', 'PATCH']) {
    for (const path of ['/api/v1/send/', '/api/v1/send']) {
      const response = await system.request(path, { method });
      assertCoded(response, 405, 'method_not_allowed');
      assert.match(response.headers.get('allow') ?? '', /\bPOST\b/, `${method} ${path}: Allow`);
    }
  }
  assertAccepted(
    await system.request('/api/v1/send', {
      method: 'POST',
      headers: { authorization: `Api-Key ${tenant.apiKey}`, 'x-organization-id': String(tenant.organizationId), 'content-type': 'application/json' },
      body: JSON.stringify(body),
    }),
  );
});

test('the gateway answers /healthz and /readyz, each service serves Prometheus /metrics on its own port, and gRPC health answers', async () => {
  const health = await system.request('/healthz', { method: 'GET' });
  assert.equal(health.status, 200, health.text);
  const ready = await system.request('/readyz', { method: 'GET' });
  assert.equal(ready.status, 200, ready.text);
  const { metrics } = system.stack.ports;
  for (const [service, port] of [
    ['auth-svc', metrics.auth],
    ['dispatch-svc', metrics.dispatch],
    ['gateway', metrics.gateway],
    ['mailer-svc', metrics.mailer[0]],
  ] as const) {
    const response = await fetch(`http://127.0.0.1:${port}/metrics`);
    assert.equal(response.status, 200, service);
    assert.match(response.headers.get('content-type') ?? '', /^text\/plain/, service);
    assert.match(await response.text(), /^# HELP notify_/m, `${service} exposes notify_ metrics`);
  }
  assert.notEqual(metrics.gateway, Number(new URL(system.gatewayUrl).port), 'metrics are not on the public port');
  assert.equal((await system.request('/metrics', { method: 'GET' })).status, 404, 'nor served by it');
  assert.equal(await system.authAdmin.serving(), true, 'auth-svc gRPC health');
  assert.equal(await system.templates.serving(), true, 'dispatch-svc gRPC health');
});
