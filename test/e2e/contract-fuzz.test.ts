// Property-based: whatever headers and body a caller sends, the running gateway answers with one of the contract's
// shapes, never a 5xx (every dependency is up), and never crashes. At least 2,000 generated requests per run, eight at a
// time, through real keys, foreign organizations, a revoked key and random header values, with bodies ranging from valid
// sends through mutated ones (`send_at` and `from` included) to random JSON and random bytes, and cancels (DELETE) of message ids.
// The same again for the batch endpoint, whose bodies hold such sends as items (and whose 200 entries are checked one by one),
// and for the management routes (API keys, suppressions, domains, webhook endpoints, statistics), whose successful
// answers are checked against the OpenAPI document, with a key of every scope among the keys; the template routes'
// answers are, whatever their status, when the document describes it. The domain verifier asks a local DNS server,
// never the host's.
import assert from 'node:assert/strict';
import { Agent } from 'node:http';
import { after, before, type TestContext, test } from 'node:test';
import fc from 'fast-check';
import { contractShapeProblem, uuidPattern } from '../harness/contract-shapes.ts';
import { DnsServer } from '../harness/dns-server.ts';
import { openApiResponseCheck, type ResponseCheck } from '../harness/openapi.ts';
import { type RawRequest, type RawResult, rawRequest } from '../harness/raw-http.ts';
import { type System, startSystem, type Tenant } from '../harness/system.ts';
import { anotherKey, validBody } from '../harness/tenants.ts';

const batchSize = 8;
const batches = 250;
let system: System;
let alpha: Tenant;
let alphaSecond: Tenant;
let beta: Tenant;
let revoked: Tenant;
/** A key of every scope (`full`) of alpha's project, for the management routes. */
let alphaFull: Tenant;
let checkDocumented: ResponseCheck;
let dns: DnsServer;
const agent = new Agent({ keepAlive: true, maxSockets: batchSize });

before(async () => {
  dns = await DnsServer.start();
  system = await startSystem({ env: { NOTIFY_PUBLIC_SEND_RATE: '1000000/min', DNS_RESOLVER: dns.address } });
  alpha = await system.createTenant('fuzz-alpha');
  alphaSecond = await anotherKey(system, alpha, 'fuzz-second');
  beta = await system.createTenant('fuzz-beta');
  revoked = await anotherKey(system, beta, 'fuzz-revoked');
  await system.authAdmin.call('RevokeApiKey', { id: revoked.keyId });
  alphaFull = await anotherKey(system, alpha, 'fuzz-full', ['full']);
  checkDocumented = openApiResponseCheck((await system.request('/api/v1/openapi.json', { method: 'GET' })).body);
  for (const tenant of [alpha, beta]) {
    await system.putTemplate(tenant.projectId, 'welcome');
    await system.putTemplate(tenant.projectId, 'retired', { active: false });
    await system.putTemplate(tenant.projectId, 'invoice', { schema: { type: 'object', required: ['name'], properties: { name: { type: 'string' } } } });
  }
});

after(async () => {
  agent.destroy();
  await system?.stop();
  await dns?.close();
});

/** Header values Node can put on the wire: tab, printable ASCII and latin-1 (CR, LF and NUL cannot be sent at all). */
const headerText = (maxLength: number): fc.Arbitrary<string> =>
  fc.string({
    unit: fc.oneof(fc.integer({ min: 0x20, max: 0x7e }), fc.integer({ min: 0xa0, max: 0xff }), fc.constant(0x09)).map((code) => String.fromCharCode(code)),
    maxLength,
  });

/** The arbitrary parts of a request; keys and organizations are picked by name once the system exists. */
interface Generated {
  method: string;
  path: string;
  key: 'alpha' | 'alphaSecond' | 'beta' | 'revoked' | 'alphaFull';
  authorization: { kind: 'valid' } | { kind: 'absent' } | { kind: 'raw'; value: string } | { kind: 'scheme'; scheme: string };
  organization: { kind: 'own' } | { kind: 'other' } | { kind: 'absent' } | { kind: 'raw'; value: string };
  contentType: string | undefined;
  idempotencyKey: string | undefined;
  acceptLanguage: string | undefined;
  requestId: string | undefined;
  body: Buffer;
  /** Only the template routes' requests carry one. */
  ifMatch?: string | undefined;
}

const emailish = fc.oneof(
  fc.constant('someone@example.com'),
  fc.emailAddress(),
  headerText(40),
  fc.constant('Ada <ada@example.com>'),
  fc.constant('a@example.com\r\nBcc: b@example.com'),
);
const dataish = fc.oneof(
  fc.constant({ name: 'Someone' }),
  fc.dictionary(fc.string({ maxLength: 8 }), fc.jsonValue({ maxDepth: 3 }), { maxKeys: 4 }),
  fc.jsonValue({ maxDepth: 3 }),
  fc.integer({ min: 30, max: 36 }).map((levels) => JSON.parse(`${'{"a":'.repeat(levels - 1)}{}${'}'.repeat(levels - 1)}`) as unknown),
);
/** send_at: mostly absent; else a time from 40 days back to 40 days ahead (past, valid and too far), a date that does not exist, junk or any JSON. */
const sendAtish = fc.oneof(
  { weight: 6, arbitrary: fc.constant(undefined) },
  { weight: 2, arbitrary: fc.integer({ min: -40 * 86_400, max: 40 * 86_400 }).map((seconds) => new Date(Date.now() + seconds * 1_000).toISOString()) },
  { weight: 1, arbitrary: fc.constantFrom('2099-02-30T10:00:00Z', '2030-01-01 10:00', '2030-01-01T10:00:00', 'tomorrow', '', '2030-01-01T10:00:00+25:00') },
  { weight: 1, arbitrary: fc.jsonValue({ maxDepth: 1 }) },
);
const field = <T>(valid: fc.Arbitrary<T>): fc.Arbitrary<unknown> =>
  fc.oneof({ weight: 4, arbitrary: valid }, { weight: 1, arbitrary: fc.jsonValue({ maxDepth: 2 }) }, { weight: 1, arbitrary: fc.constant(undefined) });
/** An optional field: mostly absent, else near its rules, or any JSON. */
const optionalField = <T>(nearValid: fc.Arbitrary<T>): fc.Arbitrary<unknown> =>
  fc.oneof({ weight: 4, arbitrary: fc.constant(undefined) }, { weight: 3, arbitrary: nearValid }, { weight: 1, arbitrary: fc.jsonValue({ maxDepth: 2 }) });
// Tags and metadata (docs/contract.md, "Tags and metadata"): within their bounds, just past them, or with text that
// PostgreSQL refuses (NUL) or a renderer could mistake (markup, control characters, reserved keys).
const tagish = fc.oneof(
  { weight: 4, arbitrary: fc.stringMatching(/^[A-Za-z0-9_-]{1,64}$/) },
  { weight: 1, arbitrary: fc.string({ maxLength: 70 }) },
  { weight: 1, arbitrary: fc.constantFrom('', 'x'.repeat(65), 'a\u0000b', '<b>', 'été') },
);
const tagsish = fc.array(tagish, { maxLength: 12 });
const metadataKeyish = fc.oneof(
  { weight: 4, arbitrary: fc.stringMatching(/^[A-Za-z0-9_-]{1,40}$/) },
  { weight: 1, arbitrary: fc.constantFrom('', 'k'.repeat(41), 'a b', '__proto__', 'constructor') },
);
const metadataValueish = fc.oneof(
  { weight: 4, arbitrary: fc.string({ maxLength: 256 }) },
  { weight: 1, arbitrary: fc.constantFrom('x'.repeat(257), 'nul\u0000', 'line\nbreak') },
  { weight: 1, arbitrary: fc.jsonValue({ maxDepth: 1 }) },
);
const metadataish = fc.dictionary(metadataKeyish, metadataValueish, { maxKeys: 22 });
// from (docs/contract.md, "Sending from your own domains"): a mailbox on a domain no organization has, with or without
// a name, or what a header injection, a list or a stray quote would look like.
const fromish = fc.oneof(
  { weight: 3, arbitrary: emailish },
  { weight: 2, arbitrary: fc.tuple(fc.string({ maxLength: 40 }), emailish).map(([name, address]) => `${name} <${address}>`) },
  {
    weight: 1,
    arbitrary: fc.constantFrom(
      '"Acme, Inc." <billing@acme.example>',
      'a@acme.example, b@acme.example',
      'Ana\r\nBcc: x@y.example <a@acme.example>',
      '"Ana <a@acme.example>',
      `${'n'.repeat(700)} <a@acme.example>`,
    ),
  },
);

/** A send body with each field kept, replaced by any JSON or dropped, maybe with unknown or reserved members. */
const nearValidBody = fc
  .record({
    template: field(fc.constantFrom('welcome', 'invoice', 'retired', 'no-such-template', 'bad slug', 's'.repeat(101))),
    to: field(emailish),
    channel: field(fc.constantFrom('email', 'sms', 'EMAIL')),
    data: field(dataish),
    tags: optionalField(tagsish),
    metadata: optionalField(metadataish),
    send_at: sendAtish,
    from: optionalField(fromish),
    extra: fc.option(fc.constantFrom('"api_key":"nk_x"', '"__proto__":{"admin":true}', '"constructor":1', '"extra":[]'), { nil: undefined }),
  })
  .map(({ extra, ...fields }) => {
    const text = JSON.stringify(fields);
    return Buffer.from(extra === undefined ? text : text === '{}' ? `{${extra}}` : text.replace(/}$/, `,${extra}}`));
  });

const bodies = fc.oneof(
  { weight: 3, arbitrary: fc.constant(Buffer.from(JSON.stringify(validBody('welcome')))) },
  // A valid scheduled send, so that cancels of real scheduled messages happen too.
  {
    weight: 1,
    arbitrary: fc
      .integer({ min: 60, max: 29 * 86_400 })
      .map((seconds) => Buffer.from(JSON.stringify(validBody('welcome', { send_at: new Date(Date.now() + seconds * 1_000).toISOString() })))),
  },
  { weight: 6, arbitrary: nearValidBody },
  { weight: 2, arbitrary: fc.jsonValue({ maxDepth: 4 }).map((value) => Buffer.from(JSON.stringify(value) ?? '')) },
  { weight: 1, arbitrary: fc.uint8Array({ maxLength: 300 }).map((bytes) => Buffer.from(bytes)) },
  { weight: 1, arbitrary: fc.string({ unit: 'binary', maxLength: 200 }).map((text) => Buffer.from(text, 'utf8')) },
);

const requests: fc.Arbitrary<Generated> = fc.record({
  method: fc.oneof(
    { weight: 20, arbitrary: fc.constant('POST') },
    { weight: 2, arbitrary: fc.constant('DELETE') },
    { weight: 1, arbitrary: fc.constantFrom('GET', 'PUT', 'PATCH', 'OPTIONS') },
  ),
  path: fc.oneof(
    { weight: 12, arbitrary: fc.constant('/api/v1/send/') },
    { weight: 4, arbitrary: fc.constant('/api/v1/send') },
    { weight: 1, arbitrary: fc.constantFrom('/api/v1/send/?x=1', '/api/v1/sen', '/api/v1/send/x', '/API/V1/SEND/', '/', '/api/v1/openapi.json', '/healthz') },
    // The cancel of a scheduled message (DELETE), and the other methods on its path.
    {
      weight: 1,
      arbitrary: fc.oneof(fc.integer({ min: 0, max: 3_000 }).map(String), headerText(12).map(encodeURIComponent)).map((id) => `/api/v1/messages/${id}/`),
    },
    { weight: 1, arbitrary: fc.webPath().map((path) => (path.startsWith('/') ? path : `/${path}`)) },
  ),
  key: fc.oneof(
    { weight: 3, arbitrary: fc.constant('alpha' as const) },
    { weight: 2, arbitrary: fc.constant('alphaSecond' as const) },
    { weight: 2, arbitrary: fc.constant('beta' as const) },
    { weight: 1, arbitrary: fc.constant('revoked' as const) },
  ),
  authorization: fc.oneof(
    { weight: 8, arbitrary: fc.constant({ kind: 'valid' as const }) },
    { weight: 1, arbitrary: fc.constant({ kind: 'absent' as const }) },
    { weight: 1, arbitrary: headerText(80).map((value) => ({ kind: 'raw' as const, value })) },
    { weight: 1, arbitrary: fc.constantFrom('Bearer', 'api-key', 'API-KEY', 'Api-Key  ', 'Basic', '').map((scheme) => ({ kind: 'scheme' as const, scheme })) },
  ),
  organization: fc.oneof(
    { weight: 8, arbitrary: fc.constant({ kind: 'own' as const }) },
    { weight: 1, arbitrary: fc.constant({ kind: 'other' as const }) },
    { weight: 1, arbitrary: fc.constant({ kind: 'absent' as const }) },
    {
      weight: 2,
      arbitrary: fc.oneof(headerText(24), fc.bigInt({ min: -(2n ** 70n), max: 2n ** 70n }).map(String)).map((value) => ({ kind: 'raw' as const, value })),
    },
  ),
  contentType: fc.oneof(
    { weight: 8, arbitrary: fc.constant('application/json') },
    {
      weight: 1,
      arbitrary: fc.constantFrom('application/json; charset=utf-8', 'text/plain', 'application/xml', 'application/json; charset=latin1', undefined),
    },
    { weight: 1, arbitrary: headerText(40) },
  ),
  idempotencyKey: fc.oneof({ weight: 6, arbitrary: fc.constant(undefined) }, { weight: 2, arbitrary: fc.uuid() }, { weight: 1, arbitrary: headerText(40) }),
  acceptLanguage: fc.oneof(
    { weight: 4, arbitrary: fc.constant(undefined) },
    { weight: 2, arbitrary: fc.constantFrom('es', 'en', 'es-MX', 'en;q=0.5,es;q=0.8', '*') },
    { weight: 1, arbitrary: headerText(40) },
  ),
  requestId: fc.oneof(
    { weight: 3, arbitrary: fc.constant(undefined) },
    { weight: 1, arbitrary: fc.stringMatching(/^[A-Za-z0-9-]{1,64}$/) },
    { weight: 1, arbitrary: headerText(200) },
  ),
  body: bodies,
});

function toRawRequest(generated: Generated): RawRequest {
  const keys = { alpha, alphaSecond, beta, revoked, alphaFull };
  const key = keys[generated.key];
  const headers: Array<[string, string]> = [];
  const { authorization, organization } = generated;
  if (authorization.kind === 'valid') headers.push(['Authorization', `Api-Key ${key.apiKey}`]);
  if (authorization.kind === 'raw') headers.push(['Authorization', authorization.value]);
  if (authorization.kind === 'scheme') headers.push(['Authorization', `${authorization.scheme} ${key.apiKey}`]);
  if (organization.kind === 'own') headers.push(['X-Organization-ID', String(key.organizationId)]);
  if (organization.kind === 'other') headers.push(['X-Organization-ID', String(key === beta || key === revoked ? alpha.organizationId : beta.organizationId)]);
  if (organization.kind === 'raw') headers.push(['X-Organization-ID', organization.value]);
  if (generated.contentType !== undefined) headers.push(['Content-Type', generated.contentType]);
  if (generated.idempotencyKey !== undefined) headers.push(['Idempotency-Key', generated.idempotencyKey]);
  if (generated.acceptLanguage !== undefined) headers.push(['Accept-Language', generated.acceptLanguage]);
  if (generated.requestId !== undefined) headers.push(['X-Request-ID', generated.requestId]);
  if (generated.ifMatch !== undefined) headers.push(['If-Match', generated.ifMatch]);
  const bodyless = generated.method === 'GET' || generated.method === 'OPTIONS';
  return { method: generated.method, path: generated.path, headers, body: bodyless ? Buffer.alloc(0) : generated.body, agent, timeoutMs: 15_000 };
}

/** The path the OpenAPI document names for a management route's URL; undefined for any other route. */
function documentedManagementPath(path: string): string | undefined {
  const managed = /^\/api\/v1\/(api-keys|suppressions|stats)(\/[^/?]+)?\/?(\?.*)?$/.exec(path);
  if (managed) return `/api/v1/${managed[1]}${managed[2] ? (managed[1] === 'api-keys' ? '/{id}' : '/{address}') : ''}`;
  if (!/^\/api\/v1\/(webhooks|domains)(\/|\?|$)/.test(path)) return undefined;
  return path
    .replace(/\?.*$/, '')
    .replace(/^(\/api\/v1\/(webhooks|domains)\/)[^/]+/, '$1{id}')
    .replace(/\/$/, '');
}

/** Why a response breaks the contract, or undefined. */
function problem(sent: RawRequest, response: RawResult, requestId: string | undefined): string | undefined {
  if (response.status >= 500) return `answered ${response.status}`;
  if (response.headers.get('cache-control') !== 'no-store') return 'no Cache-Control: no-store';
  const echoed = response.headers.get('x-request-id') ?? '';
  // What the gateway receives: HTTP drops spaces and tabs around a field value.
  const received = requestId?.replace(/^[ \t]+|[ \t]+$/g, '');
  if (received !== undefined && /^[A-Za-z0-9-]{1,64}$/.test(received) ? echoed !== received : echoed !== received && !uuidPattern.test(echoed)) {
    return `X-Request-ID ${JSON.stringify(echoed)} for ${JSON.stringify(requestId)}`;
  }
  if (sent.path.startsWith('/healthz') || sent.path === '/api/v1/openapi.json') return response.status < 500 ? undefined : 'probe failed';
  if (!['en', 'es'].includes(response.headers.get('content-language') ?? '')) return 'no Content-Language';
  if (response.status === 401 && response.headers.get('www-authenticate') !== 'Api-Key') return '401 without WWW-Authenticate: Api-Key';
  if (response.status === 429 && !(Number(response.headers.get('retry-after')) >= 1)) return '429 without Retry-After';
  // The unsubscribe pages (/u/TOKEN) are for recipients in a browser: their answers are HTML; the checks above hold.
  if (sent.path.startsWith('/u/') && response.headers.get('content-type')?.startsWith('text/html')) return undefined;
  let parsed: unknown;
  try {
    parsed = JSON.parse(response.text);
  } catch {
    return 'the body is not JSON';
  }
  // A management route's success: the shape its OpenAPI operation documents.
  const documented = documentedManagementPath(sent.path);
  if (documented && response.status < 300) {
    const problems = checkDocumented(sent.method ?? 'GET', documented, response);
    return problems.length > 0 ? problems.join('; ') : undefined;
  }
  // A template route's answer with a status its operation documents (its 422 template_invalid has its own shape).
  const template = documentedTemplatePath(sent.method ?? 'GET', sent.path);
  if (template) {
    const problems = checkDocumented(sent.method ?? 'GET', template, response);
    if (!problems[0]?.startsWith('status ')) return problems.length > 0 ? problems.join('; ') : undefined;
  }
  return contractShapeProblem(response.status, parsed);
}

/**
 * The OpenAPI path of a template route's request, or undefined for any other. `render` is the render operation only for
 * a POST: any other method on `/api/v1/templates/render/` addresses a template whose slug is `render`.
 */
function documentedTemplatePath(method: string, path: string): string | undefined {
  const route = /^\/api\/v1\/templates(?:\/(render)|\/([^/?]+)(\/versions(\/[^/?]+(\/activate)?)?)?)?\/?(?:\?.*)?$/.exec(path);
  if (!route) return undefined;
  const [, render, matchedSlug, versions, version, activate] = route;
  if (render && method === 'POST') return '/api/v1/templates/render';
  const slug = render ?? matchedSlug;
  if (!slug) return '/api/v1/templates';
  return `/api/v1/templates/{slug}${versions ? '/versions' : ''}${version ? '/{version}' : ''}${activate ? '/activate' : ''}`;
}

/** Sends `batches` x 8 generated requests; every answer must pass `problem`; returns the statuses seen, by count. */
async function fuzz(t: TestContext, generator: fc.Arbitrary<Generated>, seen: (response: RawResult) => void = () => undefined): Promise<Map<number, number>> {
  const pids = { gateway: system.stack.pid('gateway'), auth: system.stack.pid('auth-svc'), dispatch: system.stack.pid('dispatch-svc') };
  assert.ok(pids.gateway && pids.auth && pids.dispatch);
  let sentCount = 0;
  const started = performance.now();
  const statuses = new Map<number, number>();
  await fc.assert(
    fc.asyncProperty(fc.array(generator, { minLength: batchSize, maxLength: batchSize }), async (batch) => {
      const results = await Promise.all(
        batch.map(async (generated) => {
          const sent = toRawRequest(generated);
          const response = await rawRequest(system.gatewayUrl, sent);
          return { sent, response, generated };
        }),
      );
      for (const { sent, response, generated } of results) {
        sentCount++;
        statuses.set(response.status, (statuses.get(response.status) ?? 0) + 1);
        const fault = problem(sent, response, generated.requestId);
        if (fault) throw new Error(`${fault}: ${sent.method} ${sent.path} -> ${response.status} ${response.text.slice(0, 300)}`);
        seen(response);
      }
    }),
    { numRuns: batches, interruptAfterTimeLimit: 200_000, markInterruptAsFailure: true },
  );
  t.diagnostic(
    `${sentCount} requests in ${Math.round(performance.now() - started)} ms; statuses ${JSON.stringify(Object.fromEntries([...statuses].sort(([a], [b]) => a - b)))}`,
  );
  assert.ok(sentCount >= 2_000, `only ${sentCount} requests were sent`);
  assert.deepEqual(
    { gateway: system.stack.pid('gateway'), auth: system.stack.pid('auth-svc'), dispatch: system.stack.pid('dispatch-svc') },
    pids,
    'no process exited or restarted',
  );
  return statuses;
}

test('at least 2,000 generated requests: every answer has a contract shape, none is a 5xx, and no process restarts', { timeout: 240_000 }, async (t) => {
  let scheduled = 0;
  const statuses = await fuzz(t, requests, (response) => {
    if (response.status === 202 && response.text.includes('"status":"scheduled"')) scheduled += 1;
  });
  // The generators reach deep: accepted sends, each refusal class, and the field checks.
  for (const status of [202, 400, 401, 403, 404, 415, 422])
    assert.ok((statuses.get(status) ?? 0) > 0, `no ${status} among ${JSON.stringify(Object.fromEntries(statuses))}`);
  assert.ok(scheduled > 0, 'no scheduled send was accepted');
  // Still healthy afterwards.
  const last = await rawRequest(
    system.gatewayUrl,
    toRawRequest({
      method: 'POST',
      path: '/api/v1/send/',
      key: 'alpha',
      authorization: { kind: 'valid' },
      organization: { kind: 'own' },
      contentType: 'application/json',
      idempotencyKey: undefined,
      acceptLanguage: undefined,
      requestId: undefined,
      body: Buffer.from(JSON.stringify(validBody('welcome'))),
    }),
  );
  assert.equal(last.status, 202, last.text);
});

/** A batch item: a valid send body, one mutated like the single sends' (nearValidBody), or any JSON. */
const batchItem = fc.oneof(
  { weight: 3, arbitrary: fc.constant(Buffer.from(JSON.stringify(validBody('welcome')))) },
  { weight: 6, arbitrary: nearValidBody },
  { weight: 1, arbitrary: fc.jsonValue({ maxDepth: 3 }).map((value) => Buffer.from(JSON.stringify(value) ?? 'null')) },
);

const batchBodies = fc.oneof(
  { weight: 10, arbitrary: fc.array(batchItem, { minLength: 1, maxLength: 12 }).map((items) => Buffer.from(`{"messages":[${items.join(',')}]}`)) },
  { weight: 1, arbitrary: fc.jsonValue({ maxDepth: 3 }).map((messages) => Buffer.from(JSON.stringify({ messages }))) },
  // Around the 500-item limit; items of a template that does not exist, so that the big ones stay cheap to judge.
  {
    weight: 1,
    arbitrary: fc
      .integer({ min: 499, max: 501 })
      .map((length) => Buffer.from(JSON.stringify({ messages: Array.from({ length }, () => validBody('no-such-template')) }))),
  },
  { weight: 2, arbitrary: bodies },
);

/** The single sends' requests (keys, organizations, headers, methods), aimed at the batch endpoint with batch bodies. */
const batchRequests: fc.Arbitrary<Generated> = fc
  .tuple(requests, fc.constantFrom('/api/v1/send/batch/', '/api/v1/send/batch'), batchBodies)
  .map(([generated, path, body]) => ({ ...generated, path, body }));

test('at least 2,000 generated batch requests: every answer and every entry has a contract shape, none is a 5xx', { timeout: 240_000 }, async (t) => {
  const entries = new Map<number, number>();
  const statuses = await fuzz(t, batchRequests, (response) => {
    if (response.status !== 200) return;
    for (const entry of (JSON.parse(response.text) as { results: Array<{ status: number }> }).results)
      entries.set(entry.status, (entries.get(entry.status) ?? 0) + 1);
  });
  t.diagnostic(`entries ${JSON.stringify(Object.fromEntries(entries))}`);
  for (const status of [200, 400, 401, 403, 415, 422])
    assert.ok((statuses.get(status) ?? 0) > 0, `no ${status} among ${JSON.stringify(Object.fromEntries(statuses))}`);
  for (const status of [202, 404, 422]) assert.ok((entries.get(status) ?? 0) > 0, `no ${status} entry among ${JSON.stringify(Object.fromEntries(entries))}`);
});

// Last in the file: its keys, suppressions, domains and webhook endpoints change alpha's project and organization.

const collections = fc.constantFrom(
  '/api/v1/api-keys/',
  '/api/v1/api-keys',
  '/api/v1/suppressions/',
  '/api/v1/suppressions',
  '/api/v1/domains/',
  '/api/v1/domains',
  '/api/v1/webhooks/',
  '/api/v1/webhooks',
);
// Ids from 100 on: the fuzz's own keys and none, never the keys the other tests of this file send with.
const keyItems = fc
  .oneof(
    fc.integer({ min: 100, max: 2_000 }).map(String),
    headerText(20)
      .filter((id) => !/^\s*\d+\s*$/.test(id))
      .map(encodeURIComponent),
  )
  .map((id) => `/api/v1/api-keys/${id}/`);
const suppressionItems = fc.oneof(
  fc.oneof(emailish, fc.constantFrom(`hmac-sha256:${'0'.repeat(64)}`, '..')).map((address) => `/api/v1/suppressions/${encodeURIComponent(address)}/`),
  fc.constantFrom('/api/v1/suppressions/%/', '/api/v1/suppressions/%E0%A4%A/'),
);
const suppressionQueries = fc
  .record({
    reason: fc.option(fc.constantFrom('hard_bounce', 'complaint', 'unsubscribed', 'manual', 'bounced', ''), { nil: undefined }),
    address: fc.option(emailish, { nil: undefined }),
    limit: fc.option(fc.oneof(fc.integer({ min: -1, max: 101 }).map(String), headerText(6)), { nil: undefined }),
    cursor: fc.option(fc.oneof(fc.base64String({ maxLength: 40 }), headerText(20)), { nil: undefined }),
    other: fc.option(fc.constantFrom('x', 'reason'), { nil: undefined }),
  })
  .map(({ other, ...query }) => {
    const pairs = Object.entries(query).filter((pair): pair is [string, string] => pair[1] !== undefined);
    if (other) pairs.push([other, '1']);
    return `/api/v1/suppressions/?${new URLSearchParams(pairs).toString()}`;
  });

// Domain ids: the fuzz's own (it adds domains) and none; with the verify and rotate actions.
const domainItems = fc
  .tuple(
    fc.oneof(fc.integer({ min: 0, max: 60 }).map(String), headerText(20).map(encodeURIComponent)),
    fc.constantFrom('/', '', '/verify', '/rotate-dkim', '/verify/', '/rotate-dkim/', '/nope'),
  )
  .map(([id, action]) => `/api/v1/domains/${id}${action}`);

// Webhook endpoints: ids from 1 on, mostly the ones the fuzz itself creates (alpha's; the system is its own), or junk.
const webhookIds = fc.oneof(
  { weight: 4, arbitrary: fc.integer({ min: 1, max: 30 }).map(String) },
  { weight: 1, arbitrary: fc.oneof(fc.constantFrom('0', '99999999999999999999', '-1'), headerText(12).map(encodeURIComponent)) },
);
const webhookItems = fc.tuple(webhookIds, fc.constantFrom('/', '')).map(([id, slash]) => `/api/v1/webhooks/${id}${slash}`);
const webhookActions = fc
  .tuple(webhookIds, fc.constantFrom('rotate-secret', 'test', 'test/', 'rotate-secret/'))
  .map(([id, action]) => `/api/v1/webhooks/${id}/${action}`);
const webhookAttempts = fc
  .record({
    id: webhookIds,
    limit: fc.option(fc.oneof(fc.integer({ min: -1, max: 101 }).map(String), headerText(6)), { nil: undefined }),
    cursor: fc.option(fc.oneof(fc.integer({ min: 0, max: 10_000 }).map(String), headerText(20)), { nil: undefined }),
    other: fc.option(fc.constantFrom('x', 'limit'), { nil: undefined }),
  })
  .map(({ id, other, ...query }) => {
    const pairs = Object.entries(query).filter((pair): pair is [string, string] => pair[1] !== undefined);
    if (other) pairs.push([other, '1']);
    return `/api/v1/webhooks/${id}/attempts/?${new URLSearchParams(pairs).toString()}`;
  });

const utcDays = fc.integer({ min: Date.UTC(2020, 0, 1) / 86_400_000, max: Date.UTC(2030, 0, 1) / 86_400_000 }).map((day) => day * 86_400_000);
/** A bound of the statistics' range: a date, a whole hour, another minute or offset, or any text. */
const statsBound = fc.oneof(
  fc
    .tuple(utcDays, fc.integer({ min: 0, max: 47 }), fc.constantFrom(':00:00Z', ':00:00+00:00', ':30:00Z', ':00:00+02:00', ':00:00.000Z'))
    .map(([day, hours, tail]) => `${new Date(day + hours * 1_800_000).toISOString().slice(0, 13)}${tail}`),
  utcDays.map((day) => new Date(day).toISOString().slice(0, 10)),
  headerText(12),
);
const statsQueries = fc
  .record({
    from: fc.option(statsBound, { nil: undefined }),
    days: fc.integer({ min: -2, max: 400 }),
    to: fc.option(statsBound, { nil: undefined }),
    granularity: fc.option(fc.constantFrom('hour', 'day', 'week', ''), { nil: undefined }),
    tag: fc.option(fc.oneof(fc.constantFrom('campaign-a', 'bad tag', '', 'x'.repeat(65)), headerText(8)), { nil: undefined }),
    other: fc.option(fc.constantFrom('x', 'from'), { nil: undefined }),
  })
  .map(({ other, days, ...query }) => {
    // Often a range of whole days after `from`, as a caller writes one: the 200s among the refusals.
    const from = query.from?.slice(0, 10);
    const to = days > 0 && from && /^\d{4}-\d{2}-\d{2}$/.test(from) ? new Date(Date.parse(from) + days * 86_400_000).toISOString().slice(0, 10) : query.to;
    const pairs = Object.entries({ ...query, from: days > 0 ? from : query.from, to }).filter((pair): pair is [string, string] => pair[1] !== undefined);
    if (other) pairs.push([other, '1']);
    return `/api/v1/stats/?${new URLSearchParams(pairs).toString()}`;
  });
const statsPaths = fc.constantFrom('/api/v1/stats/', '/api/v1/stats');

/** A method and a path of the management routes: mostly one they serve, sometimes any other pairing. */
const managementTargets = fc.oneof(
  { weight: 3, arbitrary: fc.tuple(fc.constant('GET'), fc.oneof(collections, suppressionQueries, webhookItems, webhookAttempts)) },
  { weight: 2, arbitrary: fc.tuple(fc.constant('GET'), statsQueries) },
  { weight: 3, arbitrary: fc.tuple(fc.constant('POST'), fc.oneof(collections, webhookActions)) },
  { weight: 3, arbitrary: fc.tuple(fc.constant('DELETE'), fc.oneof(keyItems, suppressionItems, domainItems, webhookItems)) },
  { weight: 2, arbitrary: fc.tuple(fc.constantFrom('GET', 'POST'), domainItems) },
  { weight: 2, arbitrary: fc.tuple(fc.constant('PATCH'), webhookItems) },
  {
    weight: 1,
    arbitrary: fc.tuple(
      fc.constantFrom('GET', 'POST', 'DELETE', 'PATCH', 'PUT'),
      fc.oneof(collections, keyItems, suppressionItems, domainItems, webhookItems, webhookActions, statsPaths),
    ),
  },
);

/** Bodies near each route's rules: a key to issue, addresses to suppress, a domain to add, or the single sends' bodies. */
const managementBodies = fc.oneof(
  fc
    .record({
      name: field(fc.string({ maxLength: 210 })),
      scopes: optionalField(fc.array(fc.constantFrom('send', 'sending', 'full', 'keys:manage', 'suppressions:read', 'admin', ''), { maxLength: 4 })),
      test: optionalField(fc.boolean()),
    })
    .map((body) => Buffer.from(JSON.stringify(body))),
  fc.record({ addresses: field(fc.array(emailish, { maxLength: 12 })) }).map((body) => Buffer.from(JSON.stringify(body))),
  fc
    .record({ domain: field(fc.oneof(fc.domain(), fc.constantFrom('notify.localhost', 'not a domain', '-x-.example', 'a.b.', ''), headerText(30))) })
    .map((body) => Buffer.from(JSON.stringify(body))),
  // An endpoint's fields. Every URL is loopback, which webhook-svc refuses at connect time: no request leaves the machine.
  fc
    .record({
      url: optionalField(
        fc.constantFrom('https://127.0.0.1:9/hooks', 'https://localhost:9/x', 'http://127.0.0.1:9/', 'ftp://127.0.0.1/', 'https://u:p@127.0.0.1/', ''),
      ),
      event_types: optionalField(fc.array(fc.constantFrom('message.sent', 'message.failed', 'webhook.test', 'message.opened', ''), { maxLength: 4 })),
      enabled: optionalField(fc.boolean()),
    })
    .map((body) => Buffer.from(JSON.stringify(body))),
  fc.constant(Buffer.from(JSON.stringify({ url: 'https://127.0.0.1:9/valid' }))),
  bodies,
);

/** The single sends' requests aimed at the management routes, mostly with the key of every scope. */
const managementRequests: fc.Arbitrary<Generated> = fc
  .tuple(requests, managementTargets, managementBodies, fc.boolean())
  .map(([generated, [method, path], body, full]) => ({ ...generated, method, path, body, key: full ? ('alphaFull' as const) : generated.key }));

test('at least 2,000 generated requests to the management routes: every answer as documented, none is a 5xx', { timeout: 240_000 }, async (t) => {
  const statuses = await fuzz(t, managementRequests);
  for (const status of [200, 201, 400, 401, 403, 404, 422])
    assert.ok((statuses.get(status) ?? 0) > 0, `no ${status} among ${JSON.stringify(Object.fromEntries(statuses))}`);
});

// After the management routes: it changes and deletes alpha's templates.

const liquidish = fc.oneof(
  { weight: 3, arbitrary: fc.constantFrom('Hi {{ name }}', '{% if name %}x{% endif %}') },
  { weight: 2, arbitrary: fc.oneof(fc.constantFrom('{{ name', 'a\n {% iff %}', '{{ 1 | nofilter }}', ''), headerText(30)) },
);
const templateSlugs = fc.oneof(
  { weight: 4, arbitrary: fc.constantFrom('welcome', 'invoice', 'retired', 'render') },
  { weight: 4, arbitrary: fc.stringMatching(/^[a-z0-9_-]{1,12}$/) },
  { weight: 1, arbitrary: headerText(20).map(encodeURIComponent) },
);
const templateVersions = fc.oneof(fc.integer({ min: 0, max: 4 }).map(String), headerText(6).map(encodeURIComponent));
const templateItems = templateSlugs.map((slug) => `/api/v1/templates/${slug}/`);
const templateCollections = fc.constantFrom('/api/v1/templates/', '/api/v1/templates');
const templateReads = fc.oneof(
  templateCollections,
  templateItems,
  templateSlugs.map((slug) => `/api/v1/templates/${slug}/versions/`),
  fc.tuple(templateSlugs, templateVersions).map(([slug, version]) => `/api/v1/templates/${slug}/versions/${version}/`),
  fc
    .record({
      limit: fc.option(fc.oneof(fc.integer({ min: -1, max: 101 }).map(String), headerText(6)), { nil: undefined }),
      cursor: fc.option(templateSlugs, { nil: undefined }),
    })
    .map(
      (query) =>
        `/api/v1/templates/?${new URLSearchParams(Object.entries(query).filter((pair): pair is [string, string] => pair[1] !== undefined)).toString()}`,
    ),
);
const templatePosts = fc.oneof(
  templateCollections,
  fc.constantFrom('/api/v1/templates/render', '/api/v1/templates/render/'),
  fc.tuple(templateSlugs, templateVersions).map(([slug, version]) => `/api/v1/templates/${slug}/versions/${version}/activate`),
);
/** A method and a path of the template routes: mostly one they serve, sometimes any other pairing. */
const templateTargets = fc.oneof(
  { weight: 3, arbitrary: fc.tuple(fc.constant('GET'), templateReads) },
  { weight: 3, arbitrary: fc.tuple(fc.constant('POST'), templatePosts) },
  { weight: 2, arbitrary: fc.tuple(fc.constantFrom('PUT', 'DELETE'), templateItems) },
  { weight: 1, arbitrary: fc.tuple(fc.constantFrom('GET', 'POST', 'PUT', 'DELETE', 'PATCH'), fc.oneof(templateReads, templatePosts)) },
);
const templateBodies = fc.oneof(
  // A new template, as a deploy would create it.
  fc.record({ slug: fc.stringMatching(/^[a-z0-9_-]{1,12}$/), subject: liquidish, text: liquidish }).map((body) => Buffer.from(JSON.stringify(body))),
  fc
    .record({
      slug: field(templateSlugs),
      subject: field(liquidish),
      html: field(liquidish),
      text: optionalField(liquidish),
      variables_schema: optionalField(fc.constantFrom({ type: 'object' }, { type: 'strng' }, { required: ['name'] }, null)),
      activate: optionalField(fc.boolean()),
    })
    .map((body) => Buffer.from(JSON.stringify(body))),
  fc
    .record({ slug: field(templateSlugs), version: optionalField(fc.integer({ min: -1, max: 4 })), data: optionalField(dataish) })
    .map((body) => Buffer.from(JSON.stringify(body))),
  bodies,
);

/** The single sends' requests aimed at the template routes, mostly with the key of every scope and an If-Match. */
const templateRequests: fc.Arbitrary<Generated> = fc
  .tuple(
    requests,
    templateTargets,
    templateBodies,
    fc.boolean(),
    // Rarely `*`, which deletes: the stored templates stay for the stale tags' 412s.
    fc.option(
      fc.oneof({ weight: 1, arbitrary: fc.constant('*') }, { weight: 9, arbitrary: fc.oneof(fc.constantFrom('W/"1-1-1"', '"1-1-1"'), headerText(20)) }),
      { nil: undefined },
    ),
  )
  .map(([generated, [method, path], body, full, ifMatch]) => ({
    ...generated,
    method,
    path,
    body,
    ifMatch,
    key: full ? ('alphaFull' as const) : generated.key,
  }));

test('at least 2,000 generated requests to the template routes: every answer as documented, none is a 5xx', { timeout: 240_000 }, async (t) => {
  const statuses = await fuzz(t, templateRequests);
  for (const status of [200, 201, 400, 401, 403, 404, 412, 422, 428])
    assert.ok((statuses.get(status) ?? 0) > 0, `no ${status} among ${JSON.stringify(Object.fromEntries(statuses))}`);
});
