// The HTTP edge with auth-svc and dispatch-svc unreachable: what the gateway answers on its own, and that a dead
// dependency is a 503, never a 500.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import fc from 'fast-check';
import { rawRequest, type ServedApp, serveApp } from './testing/serve-app.ts';

// Nothing listens on port 1: every call fails at once with UNAVAILABLE.
const nowhere = '127.0.0.1:1';
let gateway: ServedApp;

before(async () => {
  gateway = await serveApp({ authAddress: nowhere, dispatchAddress: nowhere, maxBodyBytes: 1_024 });
});

after(async () => {
  await gateway.close();
});

const sendHeaders = { 'Content-Type': 'application/json', 'X-Organization-ID': '7' };
const body = JSON.stringify({ template: 'welcome', to: 'ana@example.com', channel: 'email', data: {} });

function post(headers: Record<string, string>, payload: string = body, path = '/api/v1/send/'): Promise<Response> {
  return fetch(`${gateway.url}${path}`, { method: 'POST', headers, body: payload });
}

test('/healthz answers while the dependencies are down', async () => {
  const response = await fetch(`${gateway.url}/healthz`);
  assert.equal(response.status, 200);
  assert.deepEqual(await response.json(), { status: 'ok' });
});

test('/readyz is 503 and names the dependencies that do not answer', async () => {
  const response = await fetch(`${gateway.url}/readyz`);
  assert.equal(response.status, 503);
  assert.deepEqual(await response.json(), { status: 'unavailable', checks: { 'auth-svc': 'failing', 'dispatch-svc': 'failing', redis: 'ok' } });
});

test('every response carries a request id and Cache-Control: no-store', async () => {
  for (const response of [await fetch(`${gateway.url}/healthz`), await fetch(`${gateway.url}/nowhere`), await post({})]) {
    assert.match(response.headers.get('x-request-id') ?? '', /^[0-9a-f-]{36}$/);
    assert.equal(response.headers.get('cache-control'), 'no-store');
  }
});

test("a sane caller's request id is echoed and an unsafe one replaced", async () => {
  const echoed = await fetch(`${gateway.url}/healthz`, { headers: { 'X-Request-ID': 'trace-42.a_b' } });
  assert.equal(echoed.headers.get('x-request-id'), 'trace-42.a_b');
  const replaced = await fetch(`${gateway.url}/healthz`, { headers: { 'X-Request-ID': 'x'.repeat(129) } });
  assert.match(replaced.headers.get('x-request-id') ?? '', /^[0-9a-f-]{36}$/);
});

test('an unknown path is 404 not_found', async () => {
  const response = await fetch(`${gateway.url}/api/v2/send/`, { method: 'POST' });
  assert.equal(response.status, 404);
  assert.deepEqual(await response.json(), { detail: 'Not found.', code: 'not_found' });
  assert.equal((await fetch(`${gateway.url}/API/V1/SEND/`, { method: 'POST' })).status, 404);
});

test('another method on a known path is 405 with Allow', async () => {
  const get = await fetch(`${gateway.url}/api/v1/send/`);
  assert.equal(get.status, 405);
  assert.equal(get.headers.get('allow'), 'POST');
  assert.deepEqual(await get.json(), { detail: 'Method "GET" not allowed.', code: 'method_not_allowed' });
  const post = await fetch(`${gateway.url}/healthz`, { method: 'POST', headers: { 'Accept-Language': 'es' } });
  assert.equal(post.status, 405);
  assert.equal(post.headers.get('allow'), 'HEAD, GET');
  assert.deepEqual(await post.json(), { detail: 'Método "POST" no permitido.', code: 'method_not_allowed' });
});

test('a Content-Length over the limit is 413 before a byte of the body is read, and before authentication', { timeout: 5_000 }, async () => {
  const response = await rawRequest(gateway.port, { headers: { 'Content-Type': 'application/json', 'Content-Length': '1025' } });
  assert.equal(response.status, 413);
  assert.deepEqual(JSON.parse(response.body), { detail: 'The request body is larger than the limit of 1024 bytes.', code: 'payload_too_large' });
  assert.equal(response.headers.connection, 'close');
  assert.equal(response.headers['www-authenticate'], undefined);
});

test('a chunked body is refused with 413 as soon as it passes the limit, while it is still streaming', { timeout: 5_000 }, async () => {
  let sent = 0;
  function* endless(): Generator<Buffer> {
    for (;;) {
      sent += 256;
      yield Buffer.alloc(256, 0x20);
    }
  }
  const response = await rawRequest(gateway.port, { headers: { 'Content-Type': 'application/json', 'Accept-Language': 'es' }, chunks: endless() });
  assert.equal(response.status, 413);
  assert.equal(response.headers['content-language'], 'es');
  assert.deepEqual(JSON.parse(response.body), { detail: 'El cuerpo de la solicitud supera el límite de 1024 bytes.', code: 'payload_too_large' });
  assert.ok(sent < 1_000_000, `the client could push ${sent} bytes`);
});

test('a body at the limit is read and judged further', async () => {
  const response = await post({}, ' '.repeat(1_024));
  assert.equal(response.status, 401);
});

test('a missing Authorization header is 401 with exactly {detail} and the Api-Key challenge', async () => {
  const response = await post({ 'X-Organization-ID': 'not-a-number', 'Content-Type': 'text/plain' }, 'not json');
  assert.equal(response.status, 401);
  assert.equal(response.headers.get('www-authenticate'), 'Api-Key');
  assert.equal(response.headers.get('content-language'), 'en');
  assert.deepEqual(await response.json(), { detail: 'Authentication credentials were not provided.' });
});

test('another scheme or a missing prefix is 401, in Spanish when asked', async () => {
  for (const authorization of ['Bearer abc.def', 'abc.def', 'api-key abc.def']) {
    const response = await post({ ...sendHeaders, Authorization: authorization, 'Accept-Language': 'es-MX,en;q=0.5' });
    assert.equal(response.status, 401, authorization);
    assert.equal(response.headers.get('www-authenticate'), 'Api-Key');
    assert.equal(response.headers.get('content-language'), 'es');
    assert.deepEqual(await response.json(), { detail: 'El encabezado Authorization debe tener la forma "Api-Key <clave>".' });
  }
});

test('a malformed key is 401 without a call to auth-svc (which is down)', async () => {
  const response = await post({ ...sendHeaders, Authorization: 'Api-Key not a key' });
  assert.equal(response.status, 401);
  assert.deepEqual(await response.json(), { detail: 'Invalid or revoked API key.' });
});

test('the send route answers with and without the trailing slash', async () => {
  assert.equal((await post({}, body, '/api/v1/send')).status, 401);
});

test('auth-svc unreachable is 503 service_unavailable with request_id and Retry-After, naming no address', async () => {
  const response = await post({ ...sendHeaders, Authorization: 'Api-Key abc.def', 'X-Request-ID': 'req-503' });
  assert.equal(response.status, 503);
  assert.equal(response.headers.get('retry-after'), '5');
  const text = await response.text();
  assert.deepEqual(JSON.parse(text), { detail: 'The service is temporarily unavailable; retry later.', code: 'service_unavailable', request_id: 'req-503' });
  assert.doesNotMatch(text, /127\.0\.0\.1|ECONNREFUSED|at |Error/);
});

test('whatever a client sends, a dead dependency never turns into a 500', async () => {
  const header = (values: string[]) => fc.option(fc.oneof(fc.constantFrom(...values), fc.string({ maxLength: 40 })), { nil: undefined });
  const requestArbitrary = fc.record({
    authorization: header(['Api-Key abc.def', 'Api-Key', 'Bearer x', 'Api-Key a.b c']),
    organization: header(['7', '0', '-1', '99999999999999999999']),
    contentType: header(['application/json', 'application/json; charset=utf-8', 'text/plain']),
    idempotencyKey: header(['0f8fad5b-d9cb-469f-a165-70867728950e', 'nope']),
    language: header(['es', 'en', 'es;q=0.9,en;q=0.8', '*']),
    path: fc.constantFrom('/api/v1/send/', '/api/v1/send'),
    body: fc.oneof(fc.string({ maxLength: 200 }), fc.json({ maxDepth: 3 }), fc.constant(body)),
  });
  await fc.assert(
    fc.asyncProperty(requestArbitrary, async (request) => {
      const headers: Record<string, string> = {};
      const set = (name: string, value: string | undefined): void => {
        // Header values fetch refuses to send are not what this property is about.
        if (value !== undefined && /^[\t\x20-\x7e]*$/.test(value) && value.trim() === value) headers[name] = value;
      };
      set('Authorization', request.authorization);
      set('X-Organization-ID', request.organization);
      set('Content-Type', request.contentType);
      set('Idempotency-Key', request.idempotencyKey);
      set('Accept-Language', request.language);
      const response = await post(headers, request.body, request.path);
      assert.ok([401, 413, 503].includes(response.status), `status ${response.status}`);
      const json = (await response.json()) as Record<string, unknown>;
      assert.equal(typeof json.detail, 'string');
      assert.ok(response.headers.get('x-request-id'));
    }),
    { numRuns: 60 },
  );
});

test('HTTP requests and send outcomes are counted by route, method and status', async () => {
  await post({});
  const requests = await gateway.registry.getSingleMetricAsString('notify_http_requests_total');
  assert.match(requests, /notify_http_requests_total\{route="\/api\/v1\/send\/",method="POST",status="401",service="gateway-test"\} \d+/);
  assert.match(requests, /route="unmatched",method="POST",status="404"/);
  const outcomes = await gateway.registry.getSingleMetricAsString('notify_send_outcomes_total');
  assert.match(outcomes, /outcome="refused",service="gateway-test"\} [1-9]/);
  assert.match(outcomes, /outcome="accepted",service="gateway-test"\} 0/);
  const duration = await gateway.registry.getSingleMetricAsString('notify_http_request_duration_seconds');
  assert.match(duration, /notify_http_request_duration_seconds_count\{service="gateway-test",route="\/api\/v1\/send\/",method="POST",status="401"\} [1-9]/);
});

test('one log line per request names method, route, status, time and request id, never the API key', async () => {
  await post({ ...sendHeaders, Authorization: 'Api-Key secretprefix.secretvalue', 'X-Request-ID': 'log-line-1' });
  await new Promise((resolve) => setImmediate(resolve));
  const lines = gateway.logs.filter((line) => line.requestId === 'log-line-1' && line.msg === 'request');
  assert.equal(lines.length, 1);
  assert.deepEqual({ method: lines[0]?.method, route: lines[0]?.route, status: lines[0]?.status }, { method: 'POST', route: '/api/v1/send/', status: 503 });
  assert.equal(typeof lines[0]?.ms, 'number');
  assert.doesNotMatch(JSON.stringify(gateway.logs), /secretvalue/);
});
