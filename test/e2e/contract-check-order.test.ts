// docs/contract.md "Order of checks (first failure wins)", one case per row: each request fails its row AND every row after
// it, and must get its row's answer. Row 10 (the idempotency record) is proven in contract-quota-idempotency.test.ts.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { assertAccepted, assertCoded, assertFieldErrors, assertUnauthenticated, writtenRows } from '../harness/contract-shapes.ts';
import { rawRequest } from '../harness/raw-http.ts';
import { type HttpResult, type System, startSystem, type Tenant } from '../harness/system.ts';
import { anotherKey, validBody } from '../harness/tenants.ts';

const rate = 3;
let system: System;
let open: Tenant;
/** Its key's budget is used up and its plan suspended: it fails rows 5 and 6 at once. */
let blocked: Tenant;

before(async () => {
  system = await startSystem({ env: { NOTIFY_PUBLIC_SEND_RATE: `${rate}/min` } });
  open = await system.createTenant('order-open');
  blocked = await system.createTenant('order-blocked');
  for (const tenant of [open, blocked]) await system.putTemplate(tenant.projectId, 'welcome');
  await system.putTemplate(open.projectId, 'retired', { active: false });
  await system.putTemplate(open.projectId, 'invoice', { schema: { type: 'object', required: ['name'], properties: { name: { type: 'string' } } } });
  await exhaust(blocked);
  await system.authAdmin.call('UpdatePlan', { id: blocked.planId, suspended: true });
});

after(async () => {
  await system?.stop();
});

async function exhaust(key: Tenant): Promise<void> {
  for (let sent = 0; sent < rate; sent++) assertAccepted(await system.send(key, validBody('welcome')));
}

/** Fails rows 7 onwards at once: not JSON by its Content-Type, malformed, a bad Idempotency-Key. */
const badFromRow7 = { body: '{"template": "bad slug", ', headers: { 'content-type': 'text/plain', 'idempotency-key': 'not-a-uuid' } };
/** Fails rows 11 onwards: wrong fields, and a template that does not exist. */
const badFromRow11 = { template: 'no-such-template', to: 'not an address', channel: 'sms', data: [] };

function send(
  key: Pick<Tenant, 'apiKey' | 'organizationId'> | { apiKey: string; organizationId: string },
  body: unknown,
  headers: Record<string, string> = {},
): Promise<HttpResult> {
  return system.request('/api/v1/send/', {
    method: 'POST',
    headers: { authorization: `Api-Key ${key.apiKey}`, 'x-organization-id': String(key.organizationId), 'content-type': 'application/json', ...headers },
    body: typeof body === 'string' ? body : JSON.stringify(body),
  });
}

test('row 1: a body over NOTIFY_MAX_BODY_BYTES is 413 payload_too_large before anything else is judged', async () => {
  const response = await rawRequest(system.gatewayUrl, {
    path: '/api/v1/send/',
    headers: [
      ['Authorization', 'Bearer nothing'],
      ['X-Organization-ID', 'abc'],
      ['Content-Type', 'text/plain'],
      ['Content-Length', '262145'],
    ],
    withholdBody: true,
  });
  assertCoded(response, 413, 'payload_too_large');
});

test('row 2: a missing, foreign-scheme, unknown or revoked credential is 401 before the organization header is judged', async () => {
  const revoked = await anotherKey(system, blocked, 'order-revoked');
  await system.authAdmin.call('RevokeApiKey', { id: revoked.keyId });
  for (const authorization of [
    undefined,
    `Bearer ${blocked.apiKey}`,
    'Api-Key nk_0123456789abcdef.AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA',
    `Api-Key ${revoked.apiKey}`,
  ]) {
    const headers: Record<string, string> = { 'x-organization-id': 'abc', ...badFromRow7.headers };
    if (authorization !== undefined) headers.authorization = authorization;
    const response = await system.request('/api/v1/send/', { method: 'POST', headers, body: badFromRow7.body });
    assertUnauthenticated(response);
  }
});

test('row 3: X-Organization-ID missing or not a positive integer is 400 invalid_header before the key organization, plan and rate', async () => {
  for (const organizationId of ['abc', '0', '']) {
    assertCoded(await send({ apiKey: blocked.apiKey, organizationId }, badFromRow7.body, badFromRow7.headers), 400, 'invalid_header');
  }
});

test("row 4: an organization the key's project is not in is 403 permission_denied before the plan and rate", async () => {
  assertCoded(await send({ apiKey: blocked.apiKey, organizationId: open.organizationId }, badFromRow7.body, badFromRow7.headers), 403, 'permission_denied');
});

test('row 5: a plan that blocks sends is 403 plan_blocked before the rate', async () => {
  assertCoded(await send(blocked, badFromRow7.body, badFromRow7.headers), 403, 'plan_blocked');
});

test('row 6: a key over its rate is 429 before the media type, body and fields', async () => {
  const key = await anotherKey(system, open, 'order-rate');
  await exhaust(key);
  const response = await send(key, badFromRow7.body, badFromRow7.headers);
  assert.equal(response.status, 429, response.text);
  assert.deepEqual(Object.keys(response.body), ['detail']);
});

test('row 7: a Content-Type other than application/json is 415 unsupported_media_type before the body is parsed', async () => {
  const key = await anotherKey(system, open, 'order-media');
  assertCoded(await send(key, badFromRow7.body, badFromRow7.headers), 415, 'unsupported_media_type');
});

test('row 8: a body that is not a UTF-8 JSON object is 400 parse_error before the Idempotency-Key is judged', async () => {
  const key = await anotherKey(system, open, 'order-parse');
  assertCoded(await send(key, badFromRow7.body, { 'idempotency-key': 'not-a-uuid' }), 400, 'parse_error');
  assertCoded(await send(key, [badFromRow11], { 'idempotency-key': 'not-a-uuid' }), 400, 'parse_error');
});

test('row 9: an Idempotency-Key that is not a UUID is 400 invalid_header before the fields are judged', async () => {
  const key = await anotherKey(system, open, 'order-idempotency');
  assertCoded(await send(key, badFromRow11, { 'idempotency-key': 'not-a-uuid' }), 400, 'invalid_header');
});

test('row 11: invalid fields are 422, all at once, before the template is looked up', async () => {
  const key = await anotherKey(system, open, 'order-fields');
  assertFieldErrors(await send(key, badFromRow11), ['channel', 'data', 'to']);
});

test('row 12: an unknown template slug is 404 template_not_found', async () => {
  const key = await anotherKey(system, open, 'order-template');
  assertCoded(await send(key, validBody('no-such-template', { data: {} })), 404, 'template_not_found');
});

test("row 13: an inactive template is 422 {template}, and data breaking the template's variables 422 {data}", async () => {
  const key = await anotherKey(system, open, 'order-active');
  assertFieldErrors(await send(key, validBody('retired')), ['template']);
  assertFieldErrors(await send(key, validBody('invoice', { data: { name: 1 } })), ['data']);
});

test('row 14: a request that passes every check is 202 and writes exactly one message', async () => {
  const key = await anotherKey(system, open, 'order-accepted');
  const before = await writtenRows(system.db);
  assertAccepted(await send(key, validBody('invoice', { data: { name: 'Ada' } })));
  assert.equal((await writtenRows(system.db)).messages, before.messages + 1);
});
