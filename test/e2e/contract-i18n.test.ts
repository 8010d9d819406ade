// docs/contract.md "Errors in general", language: Accept-Language (q-values honoured) chooses English (default) or Spanish,
// Content-Language names the one used, and codes and field names never change. Every refusal the gateway can give is
// produced twice, in English and in Spanish, and the two are compared text by text. (503: default-system/contract-edges.suite.ts, which
// stops the services anyway.)
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { after, before, test } from 'node:test';
import { assertAccepted } from '../harness/contract-shapes.ts';
import { rawRequest } from '../harness/raw-http.ts';
import { type System, startSystem, type Tenant } from '../harness/system.ts';
import { anotherKey, validBody } from '../harness/tenants.ts';
import { assertTranslated, languageHeader, type Situation } from '../harness/translation.ts';

let system: System;
let tenant: Tenant;
let stranger: Tenant;
let suspended: Tenant;
const body = validBody('welcome');
const unknownKey = 'nk_0123456789abcdef.AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA';

before(async () => {
  // 2 per minute: each situation below gets a key of its own and is produced twice; a third request is throttled.
  // The 401 cases below are failed authentications from one address: allow them so the brute-force guard stays out of the way.
  system = await startSystem({ env: { NOTIFY_PUBLIC_SEND_RATE: '2/min', NOTIFY_AUTH_FAILURE_RATE: '600/min' } });
  tenant = await system.createTenant('i18n');
  stranger = await system.createTenant('i18n-stranger');
  suspended = await system.createTenant('i18n-suspended');
  await system.authAdmin.call('UpdatePlan', { id: suspended.planId, suspended: true });
  await system.putTemplate(tenant.projectId, 'welcome');
  await system.putTemplate(tenant.projectId, 'retired', { active: false });
  await system.putTemplate(tenant.projectId, 'invoice', {
    schema: { type: 'object', required: ['name'], properties: { name: { type: 'string' }, amount: { type: 'integer' } } },
  });
});

after(async () => {
  await system?.stop();
});

type Language = 'en' | 'es';

/** A send with `tenant`'s fresh key, so that situations never share a rate budget. */
async function freshSend(payload: unknown, headers: Record<string, string> = {}): Promise<Situation> {
  const key = await anotherKey(system, tenant, 'i18n');
  return (acceptLanguage) => system.send(key, payload, { ...headers, ...languageHeader(acceptLanguage) });
}

function post(headers: Record<string, string>, payload: string = JSON.stringify(body)): Situation {
  return (acceptLanguage) => system.request('/api/v1/send/', { method: 'POST', headers: { ...headers, ...languageHeader(acceptLanguage) }, body: payload });
}

test('Accept-Language chooses Spanish or English with q-values honoured, and Content-Language names the choice', async () => {
  const cases: Record<string, Language> = {
    es: 'es',
    'es-MX': 'es',
    ES: 'es',
    'es;q=0.9,en;q=0.8': 'es',
    'en;q=0.5,es;q=0.8': 'es',
    'fr, es;q=0.5': 'es',
    'de-DE,es-419;q=0.7': 'es',
    fr: 'en',
    'en-GB': 'en',
    en: 'en',
    'en-US,en;q=0.9,es;q=0.8': 'en',
    'es;q=0': 'en',
    '*': 'en',
    'not a language tag;;': 'en',
  };
  const refusal = post({ 'content-type': 'application/json' });
  const english = await refusal(undefined);
  assert.equal(english.headers.get('content-language'), 'en', 'English without Accept-Language');
  const spanish = await refusal('es');
  for (const [header, language] of Object.entries(cases)) {
    const response = await refusal(header);
    assert.equal(response.headers.get('content-language'), language, `Accept-Language: ${header}`);
    assert.equal(response.body.detail, (language === 'es' ? spanish : english).body.detail, `Accept-Language: ${header}`);
  }
});

test('401, 400, 403, 404 and 405 texts are translated, codes and headers unchanged', async () => {
  const json = { 'content-type': 'application/json' };
  const withKey = { ...json, authorization: `Api-Key ${tenant.apiKey}` };
  const situations: Record<string, Situation> = {
    '401 no credential': post({ ...json, 'x-organization-id': String(tenant.organizationId) }),
    '401 another scheme': post({ ...json, authorization: `Bearer ${tenant.apiKey}`, 'x-organization-id': String(tenant.organizationId) }),
    '401 unknown key': post({ ...json, authorization: `Api-Key ${unknownKey}`, 'x-organization-id': String(tenant.organizationId) }),
    '400 organization missing': post(withKey),
    '400 organization invalid': post({ ...withKey, 'x-organization-id': 'abc' }),
    '403 permission_denied': post({ ...withKey, 'x-organization-id': String(stranger.organizationId) }),
    '403 plan_blocked': post({ ...json, authorization: `Api-Key ${suspended.apiKey}`, 'x-organization-id': String(suspended.organizationId) }),
    '404 not_found': (acceptLanguage) => system.request('/api/v1/nothing', { method: 'GET', headers: languageHeader(acceptLanguage) }),
    '405 method_not_allowed': (acceptLanguage) => system.request('/api/v1/send/', { method: 'GET', headers: languageHeader(acceptLanguage) }),
  };
  for (const [label, situation] of Object.entries(situations)) {
    const { en, es } = await assertTranslated(label, situation);
    if (en.status === 401) assert.equal(es.headers.get('www-authenticate'), 'Api-Key', label);
    if (en.status === 405) assert.equal(es.headers.get('allow'), en.headers.get('allow'), label);
  }
});

test('413, 415, 400 parse_error, 400 invalid Idempotency-Key and 404 template_not_found texts are translated', async () => {
  const tooLarge: Situation = (acceptLanguage) =>
    rawRequest(system.gatewayUrl, {
      path: '/api/v1/send/',
      headers: [['Content-Length', '300000'], ...(acceptLanguage ? [['Accept-Language', acceptLanguage] as const] : [])],
      withholdBody: true,
    });
  const situations: Record<string, Situation> = {
    '413 payload_too_large': tooLarge,
    '415 not JSON': await freshSend(JSON.stringify(body), { 'content-type': 'text/plain' }),
    '415 compressed': await freshSend(JSON.stringify(body), { 'content-encoding': 'gzip' }),
    '400 malformed JSON': await freshSend('{'),
    '400 not an object': await freshSend('[]'),
    '400 invalid Idempotency-Key': await freshSend(body, { 'idempotency-key': 'not-a-uuid' }),
    '404 template_not_found': await freshSend(validBody('no-such-template')),
  };
  for (const [label, situation] of Object.entries(situations)) await assertTranslated(label, situation);
  const invalidUtf8 = Buffer.concat([Buffer.from('{"template":"'), Buffer.from([0xff]), Buffer.from('"}')]);
  const key = await anotherKey(system, tenant, 'utf8');
  await assertTranslated('400 invalid UTF-8', (acceptLanguage) =>
    rawRequest(system.gatewayUrl, {
      path: '/api/v1/send/',
      headers: [
        ['Authorization', `Api-Key ${key.apiKey}`],
        ['X-Organization-ID', String(key.organizationId)],
        ['Content-Type', 'application/json'],
        ...(acceptLanguage ? [['Accept-Language', acceptLanguage] as const] : []),
      ],
      body: invalidUtf8,
    }),
  );
});

test('422 field messages are translated for every rule, field names unchanged', async () => {
  let deep: Record<string, unknown> = {};
  for (let level = 1; level < 33; level++) deep = { deeper: deep };
  const situations: Record<string, unknown> = {
    'required fields': {},
    'unknown fields': { ...body, extra: 1, api_key: 'x' },
    'wrong types': { template: 1, to: 2, channel: 3, data: 'x' },
    'blank and too long': { ...body, template: '', to: `${'a'.repeat(250)}@example.com` },
    'slug and address': { ...body, template: 'bad slug', to: 'Ada <ada@example.com>' },
    'control characters': { ...body, to: 'a@example.com\r\nBcc: b@example.com' },
    'too long a slug': { ...body, template: 's'.repeat(101) },
    'another channel': { ...body, channel: 'sms' },
    'too deep': { ...body, data: deep },
    'reserved keys': { ...body, data: { a: { constructor: 1 } } },
    'an inactive template': validBody('retired'),
  };
  for (const [label, payload] of Object.entries(situations)) {
    const { en } = await assertTranslated(`422 ${label}`, await freshSend(payload));
    assert.equal(en.status, 422, `${label}: ${en.text}`);
  }
});

test("422 messages about a template's declared variables are translated too, naming the variables in both languages", async () => {
  const { en, es } = await assertTranslated('422 data variables', await freshSend(validBody('invoice', { data: { amount: 'x' } })));
  for (const response of [en, es]) {
    const messages = (response.body.data as string[]).join(' | ');
    for (const variable of ['name', 'amount']) assert.match(messages, new RegExp(`\\b${variable}\\b`), messages);
  }
});

test('422 Idempotency-Key reused with another body is translated, its field name unchanged', async () => {
  const idempotencyKey = randomUUID();
  // Idempotency keys belong to the project: the second key of the project meets the first one's record.
  assertAccepted(await system.send(await anotherKey(system, tenant, 'idempotency-first'), body, { 'idempotency-key': idempotencyKey }));
  const other = { ...body, to: 'other@example.com' };
  const { en } = await assertTranslated('422 Idempotency-Key', await freshSend(other, { 'idempotency-key': idempotencyKey }));
  assert.deepEqual(Object.keys(en.body), ['Idempotency-Key']);
});

test('429 is translated and names, in both languages, the seconds of Retry-After', async () => {
  const key = await anotherKey(system, tenant, 'throttled');
  for (let sent = 0; sent < 2; sent++) assertAccepted(await system.send(key, body));
  const { en, es } = await assertTranslated('429', (acceptLanguage) => system.send(key, body, languageHeader(acceptLanguage)));
  assert.equal(en.status, 429);
  assert.deepEqual(Object.keys(es.body), ['detail']);
  for (const response of [en, es]) {
    const seconds = /(\d+)/.exec(String(response.body.detail))?.[1];
    assert.equal(seconds, response.headers.get('retry-after'), `${response.headers.get('content-language')}: ${response.text}`);
  }
});
