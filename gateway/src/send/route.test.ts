// POST /api/v1/send/ through real gRPC clients and a real Redis, against stand-ins of auth-svc and dispatch-svc served
// by the platform's GrpcServer: they answer with the statuses and reasons the .proto files document, so the gateway's
// order of checks and its mapping of every documented answer are proven here. The whole system is tested in test/e2e.
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { Writable } from 'node:stream';
import { after, before, test } from 'node:test';
import { status } from '@grpc/grpc-js';
import { createLogger, createRegistry, GrpcServer, UserError } from '@notify/platform';
import { authProto, dispatchProto, type auth, type dispatch } from '@notify/proto';
import { internalToken, rawRequest, serveApp, type ServedApp } from '../testing/serve-app.ts';
import { sendFingerprint } from './fingerprint.ts';

interface KeyRecord {
  keyId: number;
  organizationId: number;
  suspended?: boolean;
  sendRate?: string;
}

const keys = new Map<string, KeyRecord>([
  ['good.key', { keyId: 11, organizationId: 7 }],
  ['second.key', { keyId: 12, organizationId: 7 }],
  ['suspended.key', { keyId: 13, organizationId: 7, suspended: true }],
  ['slow-rate.key', { keyId: 14, organizationId: 7, sendRate: '2/hour' }],
  ['media.key', { keyId: 15, organizationId: 7 }],
]);

const received: dispatch.SendRequest__Output[] = [];
const celeryTaskId = randomUUID();
let services: GrpcServer;
let gateway: ServedApp;

before(async () => {
  const quiet = createLogger('stand-ins', 'silent', new Writable({ write: (_chunk, _encoding, done) => done() }));
  services = new GrpcServer({ logger: quiet, registry: createRegistry('stand-ins') });
  services.add(
    authProto.AuthService.service,
    {
      async Authorize(request: auth.AuthorizeRequest__Output): Promise<auth.AuthorizeResponse__Output> {
        const key = keys.get(request.apiKey);
        if (!key) throw new UserError(status.UNAUTHENTICATED, 'invalid_api_key', 'unknown or revoked key');
        if (request.organizationId !== key.organizationId) throw new UserError(status.PERMISSION_DENIED, 'organization_mismatch', 'not this organization');
        return {
          keyId: key.keyId,
          projectId: 21,
          organizationId: key.organizationId,
          plan: { planId: 1, name: 'basic', suspended: key.suspended ?? false, monthlyQuota: 0 },
          sendRate: key.sendRate ?? '',
        };
      },
    },
    [internalToken],
  );
  services.add(
    dispatchProto.DispatchService.service,
    {
      async Send(request: dispatch.SendRequest__Output): Promise<dispatch.SendResponse__Output> {
        received.push(request);
        switch (request.template) {
          case 'missing':
            throw new UserError(status.NOT_FOUND, 'template_not_found', 'no such template');
          case 'inactive':
            throw new UserError(status.FAILED_PRECONDITION, 'template_inactive', 'inactive');
          case 'strict':
            throw new UserError(status.INVALID_ARGUMENT, 'data_invalid', 'data refused', { fields: ['name: is required'] });
          case 'mismatch':
            throw new UserError(status.FAILED_PRECONDITION, 'idempotency_key_mismatch', 'other body');
          case 'busy':
            throw new UserError(status.ABORTED, 'idempotency_key_in_use', 'in flight');
          case 'broken':
            throw new Error('a bug in dispatch-svc');
          case 'sleepy':
            await new Promise((resolve) => setTimeout(resolve, 1_000));
            break;
        }
        return { messageId: 501, status: 'queued', celeryTaskId, idempotentReplay: request.template === 'replayed' };
      },
      async GetMessage(): Promise<dispatch.Message__Output> {
        throw new UserError(status.UNIMPLEMENTED, 'not_used', 'not used by the gateway');
      },
      async ListMessages(): Promise<dispatch.ListMessagesResponse__Output> {
        throw new UserError(status.UNIMPLEMENTED, 'not_used', 'not used by the gateway');
      },
    },
    [internalToken],
  );
  const address = `127.0.0.1:${await services.listen(0, '127.0.0.1')}`;
  gateway = await serveApp({ authAddress: address, dispatchAddress: address, deadlineMs: 500 });
});

after(async () => {
  await gateway.close();
  await services.close(1_000);
});

const valid = { template: 'welcome', to: 'ana@example.com', channel: 'email', data: { name: 'Ana', items: [{ sku: 'A-1', qty: 2 }] } };

function send(options: { key?: string; organization?: string; headers?: Record<string, string>; body?: unknown; raw?: string } = {}): Promise<Response> {
  const headers: Record<string, string> = { 'Content-Type': 'application/json', 'X-Organization-ID': options.organization ?? '7' };
  if (options.key !== '') headers['Authorization'] = `Api-Key ${options.key ?? 'good.key'}`;
  return fetch(`${gateway.url}/api/v1/send/`, {
    method: 'POST',
    headers: { ...headers, ...options.headers },
    body: options.raw ?? JSON.stringify(options.body ?? valid),
  });
}

test('an accepted send is 202 with exactly the seed fields, and dispatch-svc gets the whole request', async () => {
  const idempotencyKey = randomUUID().toUpperCase();
  const response = await send({ headers: { 'Idempotency-Key': idempotencyKey } });
  assert.equal(response.status, 202);
  assert.deepEqual(await response.json(), { message_id: 501, status: 'queued', celery_task_id: celeryTaskId, idempotent_replay: false });
  assert.equal(response.headers.get('idempotent-replayed'), null);
  assert.equal(response.headers.get('ratelimit-policy'), '"send";q=120;w=60');
  assert.match(response.headers.get('ratelimit') ?? '', /^"send";r=119;t=(60|59)$/);
  assert.deepEqual(received.at(-1), {
    projectId: 21,
    organizationId: 7,
    apiKeyId: 11,
    template: 'welcome',
    to: 'ana@example.com',
    dataJson: JSON.stringify(valid.data),
    idempotencyKey: idempotencyKey.toLowerCase(),
    fingerprint: sendFingerprint(valid, 7),
  });
});

test('without Idempotency-Key dispatch-svc gets an empty key', async () => {
  assert.equal((await send()).status, 202);
  assert.equal(received.at(-1)?.idempotencyKey, '');
});

test('the same JSON in another key order and spacing sends the same fingerprint', async () => {
  await send({ raw: '{"template":"welcome","to":"ana@example.com","channel":"email","data":{"name":"Ana","items":[{"sku":"A-1","qty":2}]}}' });
  const first = received.at(-1)?.fingerprint;
  await send({ raw: '{\n  "data": { "items": [ { "qty": 2, "sku": "A-1" } ], "name": "Ana" },\n  "channel": "email", "to": "ana@example.com",\n  "template": "welcome"\n}' });
  assert.equal(received.at(-1)?.fingerprint, first);
});

test('a replay is 202 with idempotent_replay true and Idempotent-Replayed: true', async () => {
  const response = await send({ body: { ...valid, template: 'replayed' }, headers: { 'Idempotency-Key': randomUUID() } });
  assert.equal(response.status, 202);
  assert.equal(response.headers.get('idempotent-replayed'), 'true');
  assert.deepEqual(await response.json(), { message_id: 501, status: 'queued', celery_task_id: celeryTaskId, idempotent_replay: true });
});

test('an unknown key is 401 even when the organization header is invalid too', async () => {
  for (const organization of ['7', 'abc', '']) {
    const response = await send({ key: 'unknown.key', organization });
    assert.equal(response.status, 401, organization);
    assert.equal(response.headers.get('www-authenticate'), 'Api-Key');
    assert.deepEqual(await response.json(), { detail: 'Invalid or revoked API key.' });
  }
});

test('a known key with a missing or invalid organization header is 400 invalid_header', async () => {
  const missing = await send({ organization: '' });
  assert.equal(missing.status, 400);
  assert.deepEqual(await missing.json(), { detail: 'The X-Organization-ID header is required.', code: 'invalid_header' });
  for (const organization of ['0', '-7', '07', 'seven', '7.0']) {
    const response = await send({ organization, headers: { 'Accept-Language': 'es' } });
    assert.equal(response.status, 400, organization);
    assert.deepEqual(await response.json(), { detail: 'El encabezado X-Organization-ID debe ser un número entero positivo.', code: 'invalid_header' });
  }
});

test('a key used for another organization is 403 permission_denied', async () => {
  const response = await send({ organization: '8' });
  assert.equal(response.status, 403);
  assert.deepEqual(await response.json(), { detail: 'This API key may not operate on the given organization.', code: 'permission_denied' });
  assert.equal(response.headers.get('ratelimit'), null);
});

test('a suspended plan is 403 plan_blocked and is not counted against the rate', async () => {
  const response = await send({ key: 'suspended.key', raw: 'not json' });
  assert.equal(response.status, 403);
  assert.deepEqual(await response.json(), { detail: "The organization's plan does not allow more sends.", code: 'plan_blocked' });
  assert.equal(response.headers.get('ratelimit'), null);
});

test('over the key rate the answer is 429 {detail} with the same seconds in Retry-After and the text', async () => {
  for (let i = 0; i < 2; i += 1) {
    const allowed = await send({ key: 'slow-rate.key', headers: { 'Content-Type': 'text/plain' } });
    assert.equal(allowed.status, 415);
    assert.equal(allowed.headers.get('ratelimit-policy'), '"send";q=2;w=3600');
    assert.match(allowed.headers.get('ratelimit') ?? '', new RegExp(`^"send";r=${1 - i};t=\\d+$`));
  }
  for (const language of ['en', 'es']) {
    const refused = await send({ key: 'slow-rate.key', headers: { 'Accept-Language': language } });
    assert.equal(refused.status, 429);
    const retryAfter = Number(refused.headers.get('retry-after'));
    assert.ok(Number.isInteger(retryAfter) && retryAfter >= 1 && retryAfter <= 3_600);
    assert.match(refused.headers.get('ratelimit') ?? '', new RegExp(`^"send";r=0;t=${retryAfter}$`));
    const expected =
      language === 'en'
        ? `Request was throttled. Expected available in ${retryAfter} seconds.`
        : `La solicitud fue limitada. Se espera que esté disponible en ${retryAfter} segundos.`;
    assert.deepEqual(await refused.json(), { detail: expected });
  }
});

test('a body that is not JSON is 415 after authentication and counts against the rate', async () => {
  assert.equal((await send({ key: 'unknown.key', headers: { 'Content-Type': 'text/plain' } })).status, 401);
  const response = await send({ key: 'media.key', headers: { 'Content-Type': 'application/x-www-form-urlencoded' } });
  assert.equal(response.status, 415);
  assert.deepEqual(await response.json(), { detail: 'The Content-Type must be application/json (UTF-8).', code: 'unsupported_media_type' });
  assert.match(response.headers.get('ratelimit') ?? '', /^"send";r=119;/);
  assert.equal((await send({ key: 'media.key', headers: { 'Content-Type': 'Application/JSON; charset=UTF-8' } })).status, 202);
});

test('malformed JSON, bad UTF-8 or a non-object body is 400 parse_error', async () => {
  for (const raw of ['{"template":', '[1,2]', 'null', '']) {
    const response = await send({ key: 'second.key', raw });
    assert.equal(response.status, 400, raw);
    assert.equal(((await response.json()) as { code: string }).code, 'parse_error');
  }
  const latin1 = await fetch(`${gateway.url}/api/v1/send/`, {
    method: 'POST',
    headers: { Authorization: 'Api-Key second.key', 'X-Organization-ID': '7', 'Content-Type': 'application/json' },
    body: Buffer.from('{"template":"caf\xe9"}', 'latin1'),
  });
  assert.deepEqual(await latin1.json(), { detail: 'The request body is not valid UTF-8.', code: 'parse_error' });
});

test('an Idempotency-Key that is not a UUID is 400 invalid_header, after the body parsed', async () => {
  const response = await send({ key: 'second.key', headers: { 'Idempotency-Key': 'order-42' } });
  assert.equal(response.status, 400);
  assert.deepEqual(await response.json(), { detail: 'The Idempotency-Key header must be a UUID.', code: 'invalid_header' });
  const unparsable = await send({ key: 'second.key', raw: '{', headers: { 'Idempotency-Key': 'order-42' } });
  assert.equal(((await unparsable.json()) as { code: string }).code, 'parse_error');
});

test('every invalid field is reported at once as 422, without calling dispatch-svc', async () => {
  const before = received.length;
  const response = await send({ key: 'second.key', body: { template: 'a b', to: 'Ana <ana@example.com>', channel: 'sms', api_key: 'good.key' }, headers: { 'Accept-Language': 'es;q=0.9,en;q=0.8' } });
  assert.equal(response.status, 422);
  assert.equal(response.headers.get('content-language'), 'es');
  assert.deepEqual(await response.json(), {
    template: ['Use solo letras, dígitos, guiones bajos y guiones.'],
    to: ['Introduzca una dirección de correo electrónico válida.'],
    channel: ['El único canal admitido es "email".'],
    data: ['Este campo es obligatorio.'],
    api_key: ['Campo desconocido.'],
  });
  assert.equal(received.length, before);
});

test('dispatch-svc refusals become the contract statuses and bodies', async () => {
  const cases: Array<[string, number, unknown, Record<string, string>?]> = [
    ['missing', 404, { detail: 'No template with this slug exists in the project of this API key.', code: 'template_not_found' }],
    ['inactive', 422, { template: ['This template is inactive.'] }],
    ['strict', 422, { data: ['name: is required'] }],
    ['mismatch', 422, { 'Idempotency-Key': ['This Idempotency-Key was already used with a different request.'] }],
    ['busy', 409, { detail: 'A request with this Idempotency-Key is still being processed; retry in a moment.', code: 'idempotency_key_in_use' }, { 'retry-after': '1' }],
  ];
  for (const [template, expectedStatus, expectedBody, expectedHeaders] of cases) {
    const response = await send({ key: 'second.key', body: { ...valid, template }, headers: { 'Idempotency-Key': randomUUID() } });
    assert.equal(response.status, expectedStatus, template);
    assert.deepEqual(await response.json(), expectedBody, template);
    for (const [name, value] of Object.entries(expectedHeaders ?? {})) assert.equal(response.headers.get(name), value, `${template} ${name}`);
  }
});

test('a dispatch-svc slower than the deadline is 503 service_unavailable', async () => {
  const response = await send({ key: 'second.key', body: { ...valid, template: 'sleepy' }, headers: { 'X-Request-ID': 'slow-1' } });
  assert.equal(response.status, 503);
  assert.equal(response.headers.get('retry-after'), '5');
  assert.deepEqual(await response.json(), { detail: 'The service is temporarily unavailable; retry later.', code: 'service_unavailable', request_id: 'slow-1' });
});

test('an unexpected failure is 500 internal_error with the request id, logged with its stack', async () => {
  const response = await send({ key: 'second.key', body: { ...valid, template: 'broken' }, headers: { 'X-Request-ID': 'bug-1', 'Accept-Language': 'es' } });
  assert.equal(response.status, 500);
  assert.deepEqual(await response.json(), { detail: 'Se produjo un error interno.', code: 'internal_error', request_id: 'bug-1' });
  const logged = gateway.logs.find((line) => line['requestId'] === 'bug-1' && line['level'] === 'error');
  assert.match(String((logged?.['err'] as { stack?: string } | undefined)?.stack), /RemoteError/);
});

test('a chunked body over the limit is 413 even with a valid key', { timeout: 5_000 }, async () => {
  function* chunks(): Generator<Buffer> {
    for (let i = 0; i < 40; i += 1) yield Buffer.alloc(8_192, 0x20);
  }
  const response = await rawRequest(gateway.port, { headers: { Authorization: 'Api-Key second.key', 'X-Organization-ID': '7', 'Content-Type': 'application/json' }, chunks: chunks() });
  assert.equal(response.status, 413);
});

test('the access log names the key id, and send outcomes are counted', async () => {
  await send({ key: 'second.key', headers: { 'X-Request-ID': 'outcome-1' } });
  await new Promise((resolve) => setImmediate(resolve));
  assert.equal(gateway.logs.find((line) => line['requestId'] === 'outcome-1' && line['msg'] === 'request')?.['keyId'], 12);
  const outcomes = await gateway.registry.getSingleMetricAsString('notify_send_outcomes_total');
  for (const outcome of ['accepted', 'replayed', 'throttled', 'refused']) assert.match(outcomes, new RegExp(`outcome="${outcome}",service="gateway-test"\\} [1-9]`), outcome);
});
