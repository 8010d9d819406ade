// POST /api/v1/send/ through real gRPC clients and a real Redis, against stand-ins of auth-svc and dispatch-svc served
// by the platform's GrpcServer: they answer with the statuses and reasons the .proto files document, so the gateway's
// order of checks and its mapping of every documented answer are proven here. The whole system is tested in test/e2e.
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { after, before, test } from 'node:test';
import { status } from '@grpc/grpc-js';
import { type GrpcServer, UserError } from '@notify/platform';
import { type auth, authProto, type dispatch, dispatchProto } from '@notify/proto';
import { gatewayCaller, rawRequest, type ServedApp, serveApp } from '../testing/serve-app.ts';
import { sendManyItem, standIn, standInServer } from '../testing/stand-in.ts';
import { sendFingerprint } from './fingerprint.ts';

interface KeyRecord {
  keyId: number;
  organizationId: number;
  suspended?: boolean;
  monthlyQuota?: number;
  sendRate?: string;
  test?: boolean;
}

const keys = new Map<string, KeyRecord>([
  ['good.key', { keyId: 11, organizationId: 7 }],
  ['second.key', { keyId: 12, organizationId: 7 }],
  ['suspended.key', { keyId: 13, organizationId: 7, suspended: true }],
  ['slow-rate.key', { keyId: 14, organizationId: 7, sendRate: '2/hour' }],
  ['media.key', { keyId: 15, organizationId: 7 }],
  ['full.key', { keyId: 16, organizationId: 9, monthlyQuota: 3 }],
  ['quota.key', { keyId: 17, organizationId: 10, monthlyQuota: 5 }],
  ['idempotent.key', { keyId: 18, organizationId: 7 }],
  ['steady.key', { keyId: 19, organizationId: 11, monthlyQuota: 1_000 }],
  ['warm.key', { keyId: 20, organizationId: 12, monthlyQuota: 2, sendRate: '5/hour' }],
  ['test.key', { keyId: 21, organizationId: 7, test: true }],
]);

/**
 * What the dispatch-svc stand-in knows: the month's usage per organization (counted by each accepted Send, which
 * refuses past the quota as dispatch-svc does), and idempotency records per key (judged by Send before anything else).
 */
const usage = new Map<number, number>([
  [9, 3],
  [10, 2],
]);
const usageAsked: number[] = [];
type KeyState = 'in_flight' | { fingerprint: string; response: dispatch.SendResponse__Output };
const idempotencyKeys = new Map<string, KeyState>();
/** Every call the gateway made to dispatch-svc, by method, in order. */
const dispatchCalls: string[] = [];

const received: dispatch.SendRequest__Output[] = [];
const celeryTaskId = randomUUID();
let services: GrpcServer;
let servicesAddress: string;
let gateway: ServedApp;

before(async () => {
  services = standInServer();
  services.add(
    authProto.AuthService.service,
    standIn(authProto.AuthService.service, {
      async Authorize(request: auth.AuthorizeRequest__Output): Promise<auth.AuthorizeResponse__Output> {
        const key = keys.get(request.apiKey);
        if (!key) throw new UserError(status.UNAUTHENTICATED, 'api_key_unknown', 'unknown or revoked key');
        if (request.organizationId !== key.organizationId) throw new UserError(status.PERMISSION_DENIED, 'organization_mismatch', 'not this organization');
        return {
          keyId: key.keyId,
          projectId: 21,
          organizationId: key.organizationId,
          plan: { planId: 1, name: 'basic', suspended: key.suspended ?? false, monthlyQuota: key.monthlyQuota ?? 0 },
          sendRate: key.sendRate ?? '',
          test: key.test ?? false,
          scopes: ['send', 'messages:read'],
          fromDomains: [],
        };
      },
    }),
    [gatewayCaller],
  );
  services.add(
    dispatchProto.DispatchService.service,
    standIn(dispatchProto.DispatchService.service, {
      async SendMany(request: dispatch.SendManyRequest__Output): Promise<dispatch.SendManyResponse__Output> {
        dispatchCalls.push('SendMany');
        return { results: await Promise.all(request.items.map((item) => sendManyItem(item, judgeSend))) };
      },
      async GetUsage(request: dispatch.GetUsageRequest__Output): Promise<dispatch.Usage__Output> {
        dispatchCalls.push('GetUsage');
        usageAsked.push(request.organizationId);
        return { organizationId: request.organizationId, month: '2025-01', accepted: usage.get(request.organizationId) ?? 0 };
      },
    }),
    [gatewayCaller],
  );
  servicesAddress = `127.0.0.1:${await services.listen(0, '127.0.0.1')}`;
  gateway = await serveApp({ authAddress: servicesAddress, dispatchAddress: servicesAddress, deadlineMs: 500 });
});

/** dispatch-svc's Send as the stand-in judges it, for each item of a SendMany call. */
async function judgeSend(request: dispatch.SendRequest__Output): Promise<dispatch.SendResponse__Output> {
  received.push(request);
  // Check 10 first, then the gateway's verdict on the fields (11), then the template and the rest.
  const state = request.idempotencyKey === '' ? undefined : idempotencyKeys.get(request.idempotencyKey);
  if (state === 'in_flight') throw new UserError(status.ABORTED, 'idempotency_key_in_use', 'in flight');
  if (state && state.fingerprint !== request.fingerprint) throw new UserError(status.FAILED_PRECONDITION, 'idempotency_key_mismatch', 'other body');
  if (state) return { ...state.response, idempotentReplay: true, organizationAccepted: 0, sendAt: '' };
  if (request.fieldsInvalid) throw new UserError(status.INVALID_ARGUMENT, 'fields_invalid', 'fields refused by the gateway');
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
    case 'last-of-quota':
      throw new UserError(status.FAILED_PRECONDITION, 'plan_blocked', 'quota used up meanwhile');
    case 'broken':
      throw new Error('a bug in dispatch-svc');
    case 'sleepy':
      await new Promise((resolve) => setTimeout(resolve, 1_000));
      break;
  }
  // A keyed send whose record, dispatch-svc says, lives 300 ms: the gateway may answer its replays from memory that long.
  if (request.template === 'remembered') {
    return {
      messageId: 503,
      status: 'queued',
      celeryTaskId,
      idempotentReplay: false,
      organizationAccepted: 0,
      sendAt: '',
      replayableForMs: request.idempotencyKey === '' ? 0 : 300,
    };
  }
  if (request.template === 'replayed')
    return { messageId: 501, status: 'queued', celeryTaskId, idempotentReplay: true, organizationAccepted: 0, sendAt: '', replayableForMs: 0 };
  const used = usage.get(request.organizationId) ?? 0;
  if (request.monthlyQuota > 0 && used >= request.monthlyQuota) throw new UserError(status.FAILED_PRECONDITION, 'plan_blocked', 'quota used up');
  usage.set(request.organizationId, used + 1);
  // A scheduled send: dispatch-svc answers its time back, normalized to UTC.
  if (request.sendAt !== '')
    return {
      messageId: 502,
      status: 'scheduled',
      celeryTaskId,
      idempotentReplay: false,
      organizationAccepted: used + 1,
      sendAt: new Date(request.sendAt).toISOString(),
      replayableForMs: 0,
    };
  return { messageId: 501, status: 'queued', celeryTaskId, idempotentReplay: false, organizationAccepted: used + 1, sendAt: '', replayableForMs: 0 };
}

after(async () => {
  await gateway.close();
  await services.close(1_000);
});

const valid = { template: 'welcome', to: 'ana@example.com', channel: 'email', data: { name: 'Ana', items: [{ sku: 'A-1', qty: 2 }] } };

function send(options: { key?: string; organization?: string; headers?: Record<string, string>; body?: unknown; raw?: string } = {}): Promise<Response> {
  const headers: Record<string, string> = { 'Content-Type': 'application/json', 'X-Organization-ID': options.organization ?? '7' };
  if (options.key !== '') headers.Authorization = `Api-Key ${options.key ?? 'good.key'}`;
  return fetch(`${gateway.url}/api/v1/send/`, {
    method: 'POST',
    headers: { ...headers, ...options.headers },
    body: options.raw ?? JSON.stringify(options.body ?? valid),
  });
}

test("a test key's send is the seed's 202, and reaches dispatch-svc marked test", async () => {
  const response = await send({ key: 'test.key' });
  assert.equal(response.status, 202);
  assert.deepEqual(Object.keys((await response.json()) as object).sort(), ['celery_task_id', 'idempotent_replay', 'message_id', 'status']);
  assert.equal(received.at(-1)?.apiKeyId, 21);
  assert.equal(received.at(-1)?.test, true);
});

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
    monthlyQuota: 0,
    fieldsInvalid: false,
    tags: [],
    metadataJson: '',
    test: false,
    sendAt: '',
    fromAddress: '',
    fromName: '',
    keyFromDomains: [],
  });
});

test('tags and metadata go to dispatch-svc with the rest, and the 202 body stays the seed four fields', async () => {
  const labelled = { ...valid, tags: ['welcome', 'spring-2026'], metadata: { order_id: 'A-1' } };
  const response = await send({ body: labelled, headers: { 'Idempotency-Key': randomUUID() } });
  assert.equal(response.status, 202);
  assert.deepEqual(Object.keys((await response.json()) as object), ['message_id', 'status', 'celery_task_id', 'idempotent_replay']);
  assert.deepEqual([received.at(-1)?.tags, received.at(-1)?.metadataJson], [labelled.tags, JSON.stringify(labelled.metadata)]);
  // They are part of the body, so of the idempotency fingerprint.
  assert.equal(received.at(-1)?.fingerprint, sendFingerprint(labelled, 7));
  assert.notEqual(sendFingerprint(labelled, 7), sendFingerprint({ ...labelled, tags: ['welcome'] }, 7));
});

test('a send with send_at passes it to dispatch-svc and is 202 with status scheduled and send_at', async () => {
  const sendAt = new Date(Date.now() + 86_400_000).toISOString().replace(/\.\d+Z$/, '+02:00');
  const response = await send({ body: { ...valid, send_at: sendAt } });
  assert.equal(response.status, 202);
  assert.deepEqual(await response.json(), {
    message_id: 502,
    status: 'scheduled',
    celery_task_id: celeryTaskId,
    idempotent_replay: false,
    send_at: new Date(sendAt).toISOString(),
  });
  assert.equal(received.at(-1)?.sendAt, new Date(sendAt).toISOString(), 'in UTC');
});

test('a send_at in the past is 422 on send_at, without calling dispatch-svc', async () => {
  const body = { ...valid, send_at: new Date(Date.now() - 60_000).toISOString() };
  assert.deepEqual(
    await callsOf(async () => {
      const response = await send({ body });
      assert.equal(response.status, 422);
      assert.deepEqual(await response.json(), { send_at: ['This time has already passed; omit send_at to send at once.'] });
    }),
    [],
  );
});

test('without Idempotency-Key dispatch-svc gets an empty key and no fingerprint', async () => {
  assert.equal((await send()).status, 202);
  assert.equal(received.at(-1)?.idempotencyKey, '');
  assert.equal(received.at(-1)?.fingerprint, '');
});

test('the same JSON in another key order and spacing sends the same fingerprint', async () => {
  const headers = { 'Idempotency-Key': randomUUID() };
  await send({ headers, raw: '{"template":"welcome","to":"ana@example.com","channel":"email","data":{"name":"Ana","items":[{"sku":"A-1","qty":2}]}}' });
  const first = received.at(-1)?.fingerprint;
  assert.match(first ?? '', /^[0-9a-f]{64}$/);
  await send({
    headers: { 'Idempotency-Key': randomUUID() },
    raw: '{\n  "data": { "items": [ { "qty": 2, "sku": "A-1" } ], "name": "Ana" },\n  "channel": "email", "to": "ana@example.com",\n  "template": "welcome"\n}',
  });
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
  const response = await send({
    key: 'second.key',
    body: { template: 'a b', to: 'Ana <ana@example.com>', channel: 'sms', api_key: 'good.key' },
    headers: { 'Accept-Language': 'es;q=0.9,en;q=0.8' },
  });
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
    [
      'busy',
      409,
      { detail: 'A request with this Idempotency-Key is still being processed; retry in a moment.', code: 'idempotency_key_in_use' },
      { 'retry-after': '1' },
    ],
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
  assert.deepEqual(await response.json(), {
    detail: 'The service is temporarily unavailable; retry later.',
    code: 'service_unavailable',
    request_id: 'slow-1',
  });
});

test('an unexpected failure is 500 internal_error with the request id, logged with its stack', async () => {
  const response = await send({ key: 'second.key', body: { ...valid, template: 'broken' }, headers: { 'X-Request-ID': 'bug-1', 'Accept-Language': 'es' } });
  assert.equal(response.status, 500);
  assert.deepEqual(await response.json(), { detail: 'Se produjo un error interno.', code: 'internal_error', request_id: 'bug-1' });
  const logged = gateway.logs.find((line) => line.requestId === 'bug-1' && line.level === 'error');
  assert.match(String((logged?.err as { stack?: string } | undefined)?.stack), /RemoteError/);
});

test('a chunked body over the limit is 413 even with a valid key', { timeout: 5_000 }, async () => {
  function* chunks(): Generator<Buffer> {
    for (let i = 0; i < 40; i += 1) yield Buffer.alloc(8_192, 0x20);
  }
  const response = await rawRequest(gateway.port, {
    headers: { Authorization: 'Api-Key second.key', 'X-Organization-ID': '7', 'Content-Type': 'application/json' },
    chunks: chunks(),
  });
  assert.equal(response.status, 413);
});

test('the access log names the key id, and send outcomes are counted', async () => {
  await send({ key: 'second.key', headers: { 'X-Request-ID': 'outcome-1' } });
  await new Promise((resolve) => setImmediate(resolve));
  assert.equal(gateway.logs.find((line) => line.requestId === 'outcome-1' && line.msg === 'request')?.keyId, 12);
  const outcomes = await gateway.registry.getSingleMetricAsString('notify_send_outcomes_total');
  for (const outcome of ['accepted', 'replayed', 'throttled', 'refused'])
    assert.match(outcomes, new RegExp(`outcome="${outcome}",service="gateway-test"\\} [1-9]`), outcome);
});

test('a plan with its monthly quota used up is 403 plan_blocked before the rate, the media type and the body are judged', async () => {
  const sent = received.length;
  for (const request of [{ raw: 'not json' }, { headers: { 'Content-Type': 'text/plain' } }, { body: { template: 'a b' } }]) {
    const response = await send({ key: 'full.key', organization: '9', ...request });
    assert.equal(response.status, 403);
    assert.deepEqual(await response.json(), { detail: "The organization's plan does not allow more sends.", code: 'plan_blocked' });
    assert.equal(response.headers.get('ratelimit'), null);
  }
  assert.equal(usageAsked.at(-1), 9);
  assert.equal(received.length, sent);
});

test('a plan with quota left sends, and dispatch-svc gets the quota to enforce', async () => {
  const response = await send({ key: 'quota.key', organization: '10' });
  assert.equal(response.status, 202);
  assert.equal(usageAsked.at(-1), 10);
  assert.equal(received.at(-1)?.monthlyQuota, 5);
});

test('an unlimited plan does not ask dispatch-svc for its usage', async () => {
  const asked = usageAsked.length;
  assert.equal((await send({ key: 'second.key' })).status, 202);
  assert.equal(usageAsked.length, asked);
});

test('a quota used up by requests in flight together, refused by Send, is 403 plan_blocked', async () => {
  const response = await send({ key: 'quota.key', organization: '10', body: { ...valid, template: 'last-of-quota' } });
  assert.equal(response.status, 403);
  assert.deepEqual(await response.json(), { detail: "The organization's plan does not allow more sends.", code: 'plan_blocked' });
});

/** The calls to dispatch-svc that `act` made. */
async function callsOf(act: () => Promise<unknown>): Promise<string[]> {
  const before = dispatchCalls.length;
  await act();
  return dispatchCalls.slice(before);
}

test("with a key, a body with invalid fields still goes to Send, once, as fields_invalid, and the answer is the gateway's own 422", async () => {
  const key = randomUUID();
  const body = { ...valid, to: 'not an address', channel: 'sms' };
  let response: Response | undefined;
  assert.deepEqual(
    await callsOf(
      async () => (response = await send({ key: 'idempotent.key', body, headers: { 'Idempotency-Key': key.toUpperCase(), 'Accept-Language': 'es' } })),
    ),
    ['SendMany'],
  );
  assert.equal(response?.status, 422);
  assert.deepEqual(await response?.json(), {
    to: ['Introduzca una dirección de correo electrónico válida.'],
    channel: ['El único canal admitido es "email".'],
  });
  assert.deepEqual(received.at(-1), {
    projectId: 21,
    organizationId: 7,
    apiKeyId: 18,
    template: '',
    to: '',
    dataJson: '',
    idempotencyKey: key,
    fingerprint: sendFingerprint(body, 7),
    monthlyQuota: 0,
    fieldsInvalid: true,
    tags: [],
    metadataJson: '',
    test: false,
    sendAt: '',
    fromAddress: '',
    fromName: '',
    keyFromDomains: [],
  });
  // Without a key there is no record to judge first: the 422 is answered without dispatch-svc.
  assert.deepEqual(await callsOf(async () => assert.equal((await send({ key: 'idempotent.key', body })).status, 422)), []);
});

test('a replay is answered by the one Send call', async () => {
  const key = randomUUID();
  const stored = {
    messageId: 77,
    status: 'queued',
    celeryTaskId: randomUUID(),
    idempotentReplay: false,
    organizationAccepted: 0,
    sendAt: '',
    replayableForMs: 0,
  };
  idempotencyKeys.set(key, { fingerprint: sendFingerprint(valid, 7), response: stored });
  let response: Response | undefined;
  assert.deepEqual(await callsOf(async () => (response = await send({ key: 'idempotent.key', headers: { 'Idempotency-Key': key } }))), ['SendMany']);
  assert.equal(response?.status, 202);
  assert.equal(response?.headers.get('idempotent-replayed'), 'true');
  assert.deepEqual(await response?.json(), { message_id: 77, status: 'queued', celery_task_id: stored.celeryTaskId, idempotent_replay: true });
});

test('a replay this gateway saw answered is answered from memory, after checks 1-9 and without dispatch-svc, while its record lives', async () => {
  const key = randomUUID();
  const body = { ...valid, template: 'remembered' };
  const headers = { 'Idempotency-Key': key };
  let first: Response | undefined;
  assert.deepEqual(await callsOf(async () => (first = await send({ key: 'idempotent.key', body, headers }))), ['SendMany']);
  assert.equal(first?.status, 202);
  const accepted = await first?.json();
  assert.deepEqual(accepted, { message_id: 503, status: 'queued', celery_task_id: celeryTaskId, idempotent_replay: false });

  let replay: Response | undefined;
  assert.deepEqual(await callsOf(async () => (replay = await send({ key: 'idempotent.key', body, headers: { 'Idempotency-Key': key.toUpperCase() } }))), []);
  assert.equal(replay?.status, 202);
  assert.equal(replay?.headers.get('idempotent-replayed'), 'true');
  assert.match(replay?.headers.get('ratelimit') ?? '', /^"send";r=\d+;/, 'the replay was counted against the rate (check 6)');
  assert.deepEqual(await replay?.json(), { ...accepted, idempotent_replay: true });

  // Checks 1-9 still come first; another body is dispatch-svc's to judge; without a key nothing is remembered.
  assert.equal((await send({ key: 'unknown.key', body, headers })).status, 401);
  assert.equal((await send({ key: 'idempotent.key', body, headers: { ...headers, 'Content-Type': 'text/plain' } })).status, 415);
  assert.deepEqual(
    await callsOf(() => send({ key: 'idempotent.key', body: { ...body, to: 'bo@example.com' }, headers: { 'Idempotency-Key': randomUUID() } })),
    ['SendMany'],
  );
  assert.deepEqual(await callsOf(() => send({ key: 'idempotent.key', body })), ['SendMany']);
  assert.deepEqual(await callsOf(() => send({ key: 'idempotent.key', body })), ['SendMany']);

  // The record's 300 ms are over: dispatch-svc is asked again.
  await new Promise((resolve) => setTimeout(resolve, 350));
  assert.deepEqual(await callsOf(() => send({ key: 'idempotent.key', body, headers })), ['SendMany']);
  // Another body with the key goes to dispatch-svc, remembered or not.
  assert.deepEqual(await callsOf(() => send({ key: 'idempotent.key', body: { ...body, to: 'bo@example.com' }, headers })), ['SendMany']);
});

test('a replay of a key whose body has invalid fields is the stored 202, not a 422 (check 10 before 11)', async () => {
  const key = randomUUID();
  const body = { ...valid, to: 'not an address', extra: true };
  const stored = {
    messageId: 79,
    status: 'queued',
    celeryTaskId: randomUUID(),
    idempotentReplay: false,
    organizationAccepted: 0,
    sendAt: '',
    replayableForMs: 0,
  };
  idempotencyKeys.set(key, { fingerprint: sendFingerprint(body, 7), response: stored });
  const response = await send({ key: 'idempotent.key', body, headers: { 'Idempotency-Key': key } });
  assert.equal(response.status, 202);
  assert.equal(response.headers.get('idempotent-replayed'), 'true');
  assert.deepEqual(await response.json(), { message_id: 79, status: 'queued', celery_task_id: stored.celeryTaskId, idempotent_replay: true });
  assert.equal(received.at(-1)?.fieldsInvalid, true);
});

test('a key in flight (409) or used with another body (422) wins over invalid fields and an unknown template', async () => {
  const inFlight = randomUUID();
  idempotencyKeys.set(inFlight, 'in_flight');
  const used = randomUUID();
  idempotencyKeys.set(used, {
    fingerprint: 'of another body',
    response: { messageId: 78, status: 'queued', celeryTaskId: randomUUID(), idempotentReplay: false, organizationAccepted: 0, sendAt: '', replayableForMs: 0 },
  });
  for (const [body, fieldsInvalid] of [
    [{ template: 'a b', to: 'x' }, true],
    [{ ...valid, template: 'missing' }, false],
  ] as const) {
    let busy: Response | undefined;
    assert.deepEqual(await callsOf(async () => (busy = await send({ key: 'idempotent.key', body, headers: { 'Idempotency-Key': inFlight } }))), ['SendMany']);
    assert.equal(received.at(-1)?.fieldsInvalid, fieldsInvalid);
    assert.equal(busy?.status, 409);
    assert.equal(busy?.headers.get('retry-after'), '1');
    assert.deepEqual(await busy?.json(), {
      detail: 'A request with this Idempotency-Key is still being processed; retry in a moment.',
      code: 'idempotency_key_in_use',
    });
    const mismatch = await send({ key: 'idempotent.key', body, headers: { 'Idempotency-Key': used } });
    assert.equal(mismatch.status, 422);
    assert.deepEqual(await mismatch.json(), { 'Idempotency-Key': ['This Idempotency-Key was already used with a different request.'] });
  }
});

test('a free key with invalid fields is 422 on the fields; corrected, the same key is accepted', async () => {
  const key = randomUUID();
  const invalid = await send({ key: 'idempotent.key', body: { ...valid, channel: 'sms' }, headers: { 'Idempotency-Key': key } });
  assert.equal(invalid.status, 422);
  assert.deepEqual(await invalid.json(), { channel: ['The only supported channel is "email".'] });
  assert.equal((await send({ key: 'idempotent.key', headers: { 'Idempotency-Key': key } })).status, 202);
  assert.equal(received.at(-1)?.fingerprint, sendFingerprint(valid, 7));
});

test('in steady state every send makes exactly one call to dispatch-svc: Send, with a quota or without, keyed, replayed or refused', async () => {
  // The first send of an organization with a quota asks its usage once; Send's answers keep the figure from then on.
  assert.deepEqual(await callsOf(() => send({ key: 'steady.key', organization: '11' })), ['GetUsage', 'SendMany']);
  const replayedKey = randomUUID();
  idempotencyKeys.set(replayedKey, {
    fingerprint: sendFingerprint(valid, 11),
    response: { messageId: 80, status: 'queued', celeryTaskId: randomUUID(), idempotentReplay: false, organizationAccepted: 0, sendAt: '', replayableForMs: 0 },
  });
  const requests: Array<Parameters<typeof send>[0]> = [
    {},
    { headers: { 'Idempotency-Key': randomUUID() } },
    { headers: { 'Idempotency-Key': replayedKey } },
    { body: { ...valid, template: 'missing' } },
    { body: { ...valid, to: 'nope' }, headers: { 'Idempotency-Key': randomUUID() } },
  ];
  for (let round = 0; round < 3; round += 1) {
    for (const request of requests) {
      assert.deepEqual(await callsOf(() => send({ key: 'steady.key', organization: '11', ...request })), ['SendMany'], JSON.stringify(request));
      assert.deepEqual(await callsOf(() => send({ key: 'second.key', ...request })), ['SendMany'], `unlimited plan: ${JSON.stringify(request)}`);
    }
  }
});

test('over the quota with the usage remembered from Send answers: 403 plan_blocked before the rate, without asking dispatch-svc', async () => {
  const first = await send({ key: 'warm.key', organization: '12' });
  assert.equal(first.status, 202);
  assert.match(first.headers.get('ratelimit') ?? '', /^"send";r=4;/);
  assert.deepEqual(await callsOf(async () => assert.equal((await send({ key: 'warm.key', organization: '12' })).status, 202)), ['SendMany']);
  // Send said the organization has 2 of its 2: the next requests stop at check 5, whatever else is wrong with them.
  for (const request of [{}, { raw: 'not json' }, { headers: { 'Idempotency-Key': randomUUID() } }, { body: { template: 'a b' } }]) {
    let refused: Response | undefined;
    assert.deepEqual(await callsOf(async () => (refused = await send({ key: 'warm.key', organization: '12', ...request }))), []);
    assert.equal(refused?.status, 403);
    assert.deepEqual(await refused?.json(), { detail: "The organization's plan does not allow more sends.", code: 'plan_blocked' });
    assert.equal(refused?.headers.get('ratelimit'), null);
  }
  // The refusals took nothing from the rate: with the quota raised, the next send has 2 of 5 left, not fewer.
  (keys.get('warm.key') as KeyRecord).monthlyQuota = 3;
  const raised = await send({ key: 'warm.key', organization: '12' });
  assert.equal(raised.status, 202);
  assert.match(raised.headers.get('ratelimit') ?? '', /^"send";r=2;/);
});

test('a quota that Send found used up is remembered: the next request stops at check 5 without a call or the rate', async () => {
  usage.set(13, 0);
  keys.set('raced.key', { keyId: 21, organizationId: 13, monthlyQuota: 4 });
  // The gateway remembers 0 of 4, while other requests used the quota up meanwhile.
  assert.equal((await send({ key: 'raced.key', organization: '13' })).status, 202);
  usage.set(13, 4);
  const refusedBySend = await send({ key: 'raced.key', organization: '13' });
  assert.equal(refusedBySend.status, 403);
  assert.notEqual(refusedBySend.headers.get('ratelimit'), null);
  let next: Response | undefined;
  assert.deepEqual(await callsOf(async () => (next = await send({ key: 'raced.key', organization: '13' }))), []);
  assert.equal(next?.status, 403);
  assert.equal(next?.headers.get('ratelimit'), null);
});

test('a service refusing the gateway token is 503 service_unavailable, logged as an error naming GATEWAY_TOKEN, never 401', async () => {
  const misconfigured = await serveApp({ authAddress: servicesAddress, dispatchAddress: servicesAddress, token: 'not-the-internal-token' });
  try {
    const response = await fetch(`${misconfigured.url}/api/v1/send/`, {
      method: 'POST',
      headers: { Authorization: 'Api-Key good.key', 'X-Organization-ID': '7', 'Content-Type': 'application/json', 'X-Request-ID': 'token-1' },
      body: JSON.stringify(valid),
    });
    assert.equal(response.status, 503);
    assert.equal(response.headers.get('retry-after'), '5');
    assert.equal(response.headers.get('www-authenticate'), null);
    assert.deepEqual(await response.json(), {
      detail: 'The service is temporarily unavailable; retry later.',
      code: 'service_unavailable',
      request_id: 'token-1',
    });
    const logged = misconfigured.logs.find((line) => line.requestId === 'token-1' && line.level === 'error');
    assert.match(String(logged?.msg), /GATEWAY_TOKEN/);
  } finally {
    await misconfigured.close();
  }
});

test('without Redis /readyz stays 200 and reports Redis degraded, and sends are still accepted', async () => {
  const redisless = await serveApp({ authAddress: servicesAddress, dispatchAddress: servicesAddress, redisUrl: 'redis://127.0.0.1:1' });
  try {
    const ready = await fetch(`${redisless.url}/readyz`);
    assert.equal(ready.status, 200);
    assert.deepEqual(await ready.json(), { status: 'degraded', checks: { 'auth-svc': 'ok', 'dispatch-svc': 'ok', redis: 'degraded' } });
    const response = await fetch(`${redisless.url}/api/v1/send/`, {
      method: 'POST',
      headers: { Authorization: 'Api-Key good.key', 'X-Organization-ID': '7', 'Content-Type': 'application/json' },
      body: JSON.stringify(valid),
    });
    assert.equal(response.status, 202);
    assert.match(response.headers.get('ratelimit') ?? '', /^"send";r=\d+;t=\d+$/);
  } finally {
    await redisless.close();
  }
});

test('with every dependency up /readyz is 200 ok', async () => {
  const response = await fetch(`${gateway.url}/readyz`);
  assert.equal(response.status, 200);
  assert.deepEqual(await response.json(), { status: 'ok', checks: { 'auth-svc': 'ok', 'dispatch-svc': 'ok', redis: 'ok' } });
});
