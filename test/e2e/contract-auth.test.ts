// docs/contract.md "Order of checks" rows 2-4 against the running services: the Api-Key credential (401), the X-Organization-ID header (400)
// and the key's organization (403), in that order, none of them counted against the rate limit or writing anything.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { assertAccepted, assertCoded, assertDetailOnly, assertEveryResponseHeaders, assertUnauthenticated, writtenRows } from '../harness/contract-shapes.ts';
import { rawRequest } from '../harness/raw-http.ts';
import { type HttpResult, type System, startSystem, type Tenant } from '../harness/system.ts';
import { anotherKey, validBody } from '../harness/tenants.ts';

let system: System;
let alpha: Tenant;
let beta: Tenant;
const body = validBody('welcome');

before(async () => {
  // The tests before the last one present about 35 refused keys from this address within a minute: the limit keeps them
  // all 401s, and the last test goes past it.
  system = await startSystem({ env: { NOTIFY_AUTH_FAILURE_RATE: '60/min' } });
  alpha = await system.createTenant('auth-alpha');
  beta = await system.createTenant('auth-beta');
  await system.putTemplate(alpha.projectId, 'welcome');
  await system.putTemplate(beta.projectId, 'welcome');
});

after(async () => {
  await system?.stop();
});

/** POST /api/v1/send/ with exactly these headers (plus a JSON Content-Type): `undefined` leaves a header out. */
function post(headers: Record<string, string | undefined>, payload: unknown = body): Promise<HttpResult> {
  const sent: Record<string, string> = { 'content-type': 'application/json' };
  for (const [name, value] of Object.entries(headers)) if (value !== undefined) sent[name] = value;
  return system.request('/api/v1/send/', { method: 'POST', headers: sent, body: JSON.stringify(payload) });
}

/** Refusals before the rate limit (checks 2-5) are not counted: they carry no rate-limit headers. */
function assertNotCounted(response: HttpResult): void {
  assert.equal(response.headers.get('ratelimit'), null, `RateLimit on ${response.status} ${response.text}`);
  assert.equal(response.headers.get('ratelimit-policy'), null, `RateLimit-Policy on ${response.status} ${response.text}`);
}

test('a missing, foreign, misspelt, unknown or malformed credential is answered 401 {detail} with WWW-Authenticate: Api-Key', async () => {
  const [prefix] = alpha.apiKey.split('.');
  const otherSecret = 'A'.repeat(43);
  const cases: Record<string, string | undefined> = {
    'no Authorization header': undefined,
    'an empty Authorization header': '',
    'the Bearer scheme': `Bearer ${alpha.apiKey}`,
    'the Basic scheme': `Basic ${Buffer.from(`user:${alpha.apiKey}`).toString('base64')}`,
    'the scheme in lower case (api-key)': `api-key ${alpha.apiKey}`,
    'the scheme in upper case (API-KEY)': `API-KEY ${alpha.apiKey}`,
    'the scheme without its hyphen (ApiKey)': `ApiKey ${alpha.apiKey}`,
    'the key without the Api-Key prefix': alpha.apiKey,
    'the scheme followed by a colon': `Api-Key:${alpha.apiKey}`,
    'the scheme without a key': 'Api-Key',
    'the scheme and a blank key': 'Api-Key    ',
    'an unknown well-formed key': 'Api-Key nk_0123456789abcdef.AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA',
    "a known key's prefix with a wrong secret": `Api-Key ${prefix}.${otherSecret}`,
    'a key too short to be one': 'Api-Key abc',
    'a valid key with a character appended': `Api-Key ${alpha.apiKey}x`,
    'a key with a space inside': `Api-Key ${alpha.apiKey} extra`,
    'a 600-character key': `Api-Key ${'a'.repeat(600)}`,
  };
  const before = await writtenRows(system.db);
  for (const [label, authorization] of Object.entries(cases)) {
    const response = await post({ authorization, 'x-organization-id': String(alpha.organizationId) });
    assert.equal(response.status, 401, `${label}: ${response.status} ${response.text}`);
    assertUnauthenticated(response);
    assertEveryResponseHeaders(response);
    assertNotCounted(response);
  }
  assert.deepEqual(await writtenRows(system.db), before, 'a refused credential writes nothing');
  // The same request with the real key passes: the refusals above were about the credential alone.
  assertAccepted(await post({ authorization: `Api-Key ${alpha.apiKey}`, 'x-organization-id': String(alpha.organizationId) }));
});

test('an API key sent in the body instead of the header is refused: 401 without the header', async () => {
  const response = await post({ 'x-organization-id': String(alpha.organizationId) }, { ...body, api_key: alpha.apiKey });
  assertUnauthenticated(response);
  assertNotCounted(response);
});

test('a revoked key is refused with 401 within 2 seconds while another key of the same project keeps working', async () => {
  const doomed = await anotherKey(system, alpha, 'doomed');
  assertAccepted(await system.send(doomed, body));
  await system.authAdmin.call('RevokeApiKey', { id: doomed.keyId });
  const revokedAt = Date.now();
  let response = await system.send(doomed, body);
  while (response.status !== 401 && Date.now() - revokedAt < 2_000) {
    await new Promise((resolve) => setTimeout(resolve, 50));
    response = await system.send(doomed, body);
  }
  assertUnauthenticated(response);
  assertNotCounted(response);
  assertAccepted(await system.send(alpha, body));
});

/** auth-svc's key lookups so far, by whether its cache answered or the database was asked. */
async function keyLookups(): Promise<{ hit: number; miss: number }> {
  const text = await (await fetch(`http://127.0.0.1:${system.stack.ports.metrics.auth}/metrics`)).text();
  const count = (result: string): number =>
    Number(new RegExp(`^notify_auth_cache_lookups_total\\{[^}]*result="${result}"[^}]*\\} (\\d+)`, 'm').exec(text)?.[1] ?? 0);
  return { hit: count('hit'), miss: count('miss') };
}

test('guessing costs the database nothing: an unknown key is looked up once, then answered from the cache; a malformed one never', async () => {
  const guess = `Api-Key nk_${'fedcba9876543210'}.${'C'.repeat(43)}`;
  const before = await keyLookups();
  for (let attempt = 0; attempt < 20; attempt++) {
    assertUnauthenticated(await post({ authorization: guess, 'x-organization-id': String(alpha.organizationId) }));
  }
  const afterGuesses = await keyLookups();
  assert.deepEqual({ miss: afterGuesses.miss - before.miss, hit: afterGuesses.hit - before.hit }, { miss: 1, hit: 19 });
  for (let attempt = 0; attempt < 5; attempt++) {
    assertUnauthenticated(await post({ authorization: `Api-Key nk_malformed.${attempt}`, 'x-organization-id': String(alpha.organizationId) }));
  }
  assert.deepEqual(await keyLookups(), afterGuesses, 'a malformed key is refused before any lookup');
});

test('X-Organization-ID missing or not a positive integer is answered 400 invalid_header', async () => {
  const values: Record<string, string | undefined> = {
    missing: undefined,
    empty: '',
    zero: '0',
    negative: '-1',
    letters: 'abc',
    decimal: '1.5',
    'with a plus sign': '+1',
    'with a leading zero': `0${alpha.organizationId}`,
    exponent: '1e3',
    hexadecimal: '0x1A',
    'two numbers': `${alpha.organizationId} ${alpha.organizationId}`,
    'digits then letters': `${alpha.organizationId}abc`,
    'beyond 2^53': '99999999999999999999',
  };
  const before = await writtenRows(system.db);
  for (const [label, value] of Object.entries(values)) {
    const response = await post({ authorization: `Api-Key ${alpha.apiKey}`, 'x-organization-id': value });
    assert.equal(response.status, 400, `${label} (${JSON.stringify(value)}): ${response.text}`);
    assertCoded(response, 400, 'invalid_header');
    assertEveryResponseHeaders(response);
    assertNotCounted(response);
  }
  // Two headers arrive joined ("1, 2"): not one positive integer either.
  const twice = await rawRequest(system.gatewayUrl, {
    path: '/api/v1/send/',
    headers: [
      ['Authorization', `Api-Key ${alpha.apiKey}`],
      ['X-Organization-ID', String(alpha.organizationId)],
      ['X-Organization-ID', String(beta.organizationId)],
      ['Content-Type', 'application/json'],
    ],
    body: Buffer.from(JSON.stringify(body)),
  });
  assertCoded(twice, 400, 'invalid_header');
  assert.deepEqual(await writtenRows(system.db), before);
});

test('spaces around the X-Organization-ID value are not part of it (RFC 9110 field values), so " <id>" is that id', async () => {
  // HTTP strips optional whitespace around a field value before any application sees it, so " 1" cannot be told
  // apart from "1": the padded id means the id itself, for better (its own organization) or worse (another one).
  const padded = await rawRequest(system.gatewayUrl, {
    path: '/api/v1/send/',
    headers: [
      ['Authorization', `Api-Key ${alpha.apiKey}`],
      ['X-Organization-ID', ` ${alpha.organizationId} `],
      ['Content-Type', 'application/json'],
    ],
    body: Buffer.from(JSON.stringify(body)),
  });
  assertAccepted(padded);
  const foreign = await post({ authorization: `Api-Key ${alpha.apiKey}`, 'x-organization-id': ` ${beta.organizationId}` });
  assertCoded(foreign, 403, 'permission_denied');
});

test('a bad credential wins over a bad X-Organization-ID: 401, never 400', async () => {
  const cases: Array<[string, string | undefined, string | undefined]> = [
    ['no credential, no organization', undefined, undefined],
    ['no credential, organization "abc"', undefined, 'abc'],
    ['Bearer scheme, organization "0"', `Bearer ${alpha.apiKey}`, '0'],
    ['unknown key, organization "-1"', 'Api-Key nk_0123456789abcdef.AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA', '-1'],
    ['malformed key, organization missing', 'Api-Key abc', undefined],
    ['unknown key, a foreign organization', 'Api-Key nk_0123456789abcdef.AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA', String(beta.organizationId)],
  ];
  for (const [label, authorization, organization] of cases) {
    const response = await post({ authorization, 'x-organization-id': organization });
    assert.equal(response.status, 401, `${label}: ${response.text}`);
    assertUnauthenticated(response);
  }
});

test("a valid key on an organization its project does not belong to is answered 403 permission_denied, after the header's 400", async () => {
  const before = await writtenRows(system.db);
  for (const [caller, organization] of [
    [alpha, beta.organizationId],
    [beta, alpha.organizationId],
    [alpha, 987_654_321],
  ] as const) {
    const response = await post({ authorization: `Api-Key ${caller.apiKey}`, 'x-organization-id': String(organization) });
    assertCoded(response, 403, 'permission_denied');
    assertEveryResponseHeaders(response);
    assertNotCounted(response);
  }
  // The header is judged before the organization: a malformed one is 400 even for a key of another organization.
  assertCoded(await post({ authorization: `Api-Key ${alpha.apiKey}`, 'x-organization-id': '1.0' }), 400, 'invalid_header');
  assert.deepEqual(await writtenRows(system.db), before);
});

// Last in this file: once it works, every failed attempt after it may be throttled.
test('failed attempts from one client address are limited (brute force) while a valid key from that address keeps working', async () => {
  const guess = (attempt: number): string => `Api-Key nk_${attempt.toString(16).padStart(16, '0')}.${'B'.repeat(43)}`;
  const statuses: number[] = [];
  let throttled: HttpResult | undefined;
  for (let attempt = 0; attempt < 100 && !throttled; attempt++) {
    const response = await post({ authorization: guess(attempt), 'x-organization-id': String(alpha.organizationId) });
    statuses.push(response.status);
    if (response.status === 429) throttled = response;
    else assert.equal(response.status, 401, response.text);
  }
  assert.ok(throttled, `100 failed attempts in a row from one address were all answered: ${statuses.join(',')}`);
  assertDetailOnly(throttled, 429);
  assertEveryResponseHeaders(throttled);
  const seconds = Number(throttled.headers.get('retry-after'));
  assert.ok(Number.isInteger(seconds) && seconds >= 1 && seconds <= 60, 'the throttled attempt says when to retry');
  assert.equal(throttled.body.detail, `Request was throttled. Expected available in ${seconds} seconds.`);
  assertNotCounted(throttled);

  // Once blocked, guesses with new keys cost auth-svc no lookup at all.
  const lookups = await keyLookups();
  for (let attempt = 1_000; attempt < 1_010; attempt++) {
    const response = await post({ authorization: guess(attempt), 'x-organization-id': String(alpha.organizationId) });
    assert.equal(response.status, 429, response.text);
  }
  assert.equal((await post({ authorization: 'Api-Key abc', 'x-organization-id': String(alpha.organizationId) })).status, 429, 'a malformed key alike');
  assert.deepEqual(await keyLookups(), lookups, 'a blocked address reaches auth-svc no more');
  // A request without an Api-Key credential tries no key: it is answered 401 as ever.
  assertUnauthenticated(await post({ 'x-organization-id': String(alpha.organizationId) }));

  // The caller that holds a real key is not locked out by someone guessing from the same address.
  assertAccepted(await system.send(alpha, body));
  assertAccepted(await system.send(beta, body));
});
