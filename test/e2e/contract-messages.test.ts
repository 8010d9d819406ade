// docs/contract.md "Reading messages" against the running system: GET /api/v1/messages/{message_id}/ and
// GET /api/v1/messages/, their tenancy (another project's or organization's id is 404 both ways, exactly like an id that
// does not exist), their own rate bucket, keyset pages under concurrent sends, and the 422 of a bad filter. Every
// response is also checked against the OpenAPI document the gateway serves.
import assert from 'node:assert/strict';
import { randomBytes, randomUUID } from 'node:crypto';
import { after, before, test } from 'node:test';
import { assertCoded, assertDetailOnly, assertFieldErrors } from '../harness/contract-shapes.ts';
import { openApiResponseCheck, type ResponseCheck } from '../harness/openapi.ts';
import { type HttpResult, type System, startSystem, type Tenant } from '../harness/system.ts';
import { anotherKey, validBody } from '../harness/tenants.ts';
import { waitFor } from '../harness/wait.ts';

/** NOTIFY_PUBLIC_READ_RATE of this system: small enough to run out of in a test, large enough for the others. */
const readRate = 60;

let system: System;
let checkResponse: ResponseCheck;

before(async () => {
  system = await startSystem({ env: { NOTIFY_PUBLIC_READ_RATE: `${readRate}/min`, NOTIFY_PUBLIC_SEND_RATE: '100000/min' } });
  const served = await system.request('/api/v1/openapi.json', { method: 'GET' });
  checkResponse = openApiResponseCheck(served.body);
});

after(async () => {
  await system?.stop();
});

async function tenantWithTemplate(name: string): Promise<Tenant> {
  const tenant = await system.createTenant(`${name}-${randomUUID().slice(0, 6)}`);
  await system.putTemplate(tenant.projectId, 'welcome');
  return tenant;
}

/** The documented path of a read, for the OpenAPI check (the reads are documented without the trailing slash). */
const documentedPath = (path: string): string =>
  path.startsWith('/api/v1/messages/') && path.length > '/api/v1/messages/'.length ? '/api/v1/messages/{message_id}' : '/api/v1/messages';

async function read(tenant: Pick<Tenant, 'apiKey' | 'organizationId'>, path: string, headers: Record<string, string> = {}): Promise<HttpResult> {
  const response = await system.request(path, {
    method: 'GET',
    headers: { authorization: `Api-Key ${tenant.apiKey}`, 'x-organization-id': String(tenant.organizationId), ...headers },
  });
  assert.deepEqual(checkResponse('GET', documentedPath(path.split('?')[0] ?? path), response), [], `GET ${path}: ${response.status} ${response.text}`);
  return response;
}

async function sendOne(tenant: Tenant, to = 'someone@example.com'): Promise<number> {
  const response = await system.send(tenant, validBody('welcome', { to }));
  assert.equal(response.status, 202, response.text);
  return response.body.message_id as number;
}

test("without a collector, a send's access log line names the trace its message keeps: the caller's when it sent one", async () => {
  const tenant = await tenantWithTemplate('traced');
  const callerTrace = randomBytes(16).toString('hex');
  const sends: Array<{ requestId: string; headers: Record<string, string> }> = [
    { requestId: randomUUID(), headers: {} },
    { requestId: randomUUID(), headers: { traceparent: `00-${callerTrace}-00f067aa0ba902b7-01` } },
  ];
  const traces: unknown[] = [];
  for (const { requestId, headers } of sends) {
    const response = await system.send(tenant, validBody('welcome'), { 'x-request-id': requestId, ...headers });
    assert.equal(response.status, 202, response.text);
    const kept = (await read(tenant, `/api/v1/messages/${response.body.message_id as number}/`)).body.trace_id;
    assert.match(String(kept), /^(?!0{32})[0-9a-f]{32}$/);
    const accessLine = await waitFor(
      async () =>
        system.stack.logs
          .lines('gateway')
          .map((line) => (line.text.startsWith('{') ? (JSON.parse(line.text) as Record<string, unknown>) : {}))
          .find((line) => line.requestId === requestId && line.msg === 'request'),
      { timeoutMs: 5_000, what: `the access log line of ${requestId}` },
    );
    assert.equal(accessLine.trace_id, kept, 'the access log line and the message name one trace');
    traces.push(kept);
  }
  assert.notEqual(traces[0], callerTrace);
  assert.equal(traces[1], callerTrace);
});

test('a sent message reads back with its status, its fields and its transitions oldest first', async () => {
  const tenant = await tenantWithTemplate('reader');
  const id = await sendOne(tenant, 'ada@example.com');
  const sent = await waitFor(
    async () => {
      const response = await read(tenant, `/api/v1/messages/${id}/`);
      return response.body.status === 'sent' && response;
    },
    { timeoutMs: 20_000, what: 'the message to be read as sent' },
  );
  assert.equal(sent.status, 200);
  assert.equal(sent.headers.get('cache-control'), 'no-store');
  assert.ok(sent.headers.get('x-request-id'));
  assert.match(sent.headers.get('ratelimit-policy') ?? '', new RegExp(`^"read";q=${readRate};w=60$`));
  assert.match(sent.headers.get('ratelimit') ?? '', /^"read";r=\d+;t=\d+$/);
  const body = sent.body;
  assert.equal(body.message_id, id);
  assert.equal(body.to, 'ada@example.com');
  assert.equal(body.template, 'welcome');
  assert.equal(body.template_version, 1);
  assert.equal(body.attempts, 1);
  assert.equal(body.failure_reason, null);
  assert.match(String(body.trace_id), /^[0-9a-f]{32}$/, 'the trace of the accepting request');
  assert.match(String(body.last_smtp_reply), /^250/);
  const events = body.events as Array<Record<string, unknown>>;
  assert.deepEqual(
    events.map((event) => event.status),
    ['queued', 'sending', 'sent'],
  );
  const times = events.map((event) => Date.parse(String(event.at)));
  assert.deepEqual(
    [...times].sort((a, b) => a - b),
    times,
    'oldest first',
  );
  assert.match(String(body.created_at), /Z$/, 'RFC 3339 UTC');
  // Without the trailing slash too, and in Spanish when asked (the body does not change, the language header does).
  const again = await read(tenant, `/api/v1/messages/${id}`, { 'accept-language': 'es' });
  assert.equal(again.status, 200);
  assert.equal(again.headers.get('content-language'), 'es');
});

test("another organization's or another project's message is 404 both ways, exactly like an id that does not exist", async () => {
  const alpha = await tenantWithTemplate('alpha');
  const beta = await tenantWithTemplate('beta');
  // A second project in alpha's organization, with its own key.
  const project = await system.authAdmin.call('CreateProject', { organizationId: alpha.organizationId, name: 'alpha-second' });
  const key = await system.authAdmin.call('CreateApiKey', { projectId: project.id, name: 'second' });
  const sibling: Tenant = { ...alpha, projectId: project.id, keyId: key.key?.id ?? 0, apiKey: key.apiKey };
  await system.putTemplate(sibling.projectId, 'welcome');
  const ids = new Map([
    [alpha, await sendOne(alpha)],
    [beta, await sendOne(beta)],
    [sibling, await sendOne(sibling)],
  ]);
  const missing = await read(alpha, '/api/v1/messages/999999999/');
  assertCoded(missing, 404, 'message_not_found');

  for (const [caller, owner] of [
    [alpha, beta],
    [beta, alpha],
    [alpha, sibling],
    [sibling, alpha],
  ] as const) {
    assert.equal((await read(owner, `/api/v1/messages/${ids.get(owner)}/`)).status, 200);
    const foreign = await read(caller, `/api/v1/messages/${ids.get(owner)}/`);
    assertCoded(foreign, 404, 'message_not_found');
    assert.deepEqual(foreign.body, missing.body, 'indistinguishable from an id that does not exist');
    const listed = await read(caller, '/api/v1/messages/');
    assert.deepEqual(
      (listed.body.results as Array<Record<string, unknown>>).map((message) => message.message_id),
      [ids.get(caller)],
    );
  }
  // The other organization in the header is the send endpoint's 403, before any message is looked at.
  assertCoded(await read({ apiKey: alpha.apiKey, organizationId: beta.organizationId }, `/api/v1/messages/${ids.get(beta)}/`), 403, 'permission_denied');
  assertCoded(await read(alpha, '/api/v1/messages/not-a-number/'), 404, 'message_not_found');
});

test('authentication and the organization header are checked as for a send', async () => {
  const tenant = await tenantWithTemplate('auth');
  const anonymous = await system.request('/api/v1/messages/', { method: 'GET' });
  assertDetailOnly(anonymous, 401);
  assert.equal(anonymous.headers.get('www-authenticate'), 'Api-Key');
  assertCoded(await read({ apiKey: tenant.apiKey, organizationId: 0 }, '/api/v1/messages/'), 400, 'invalid_header');
});

test('reads have their own bucket: running out of it answers 429 and never uses up the send limit', async () => {
  const tenant = await anotherKey(system, await tenantWithTemplate('bucket'), 'reads');
  let last: HttpResult | undefined;
  for (let index = 0; index < readRate; index += 1) last = await read(tenant, '/api/v1/messages/?limit=1');
  assert.equal(last?.status, 200);
  assert.match(last?.headers.get('ratelimit') ?? '', /^"read";r=0;t=\d+$/);
  const refused = await read(tenant, '/api/v1/messages/?limit=1');
  assertDetailOnly(refused, 429);
  const seconds = Number(refused.headers.get('retry-after'));
  assert.ok(seconds >= 1 && seconds <= 60);
  assert.equal(refused.body.detail, `Request was throttled. Expected available in ${seconds} seconds.`);
  // The send bucket of the same key is untouched: its first counted request sees all of its quota but one.
  const send = await system.send(tenant, validBody('welcome'));
  assert.equal(send.status, 202, send.text);
  assert.equal(send.headers.get('ratelimit-policy'), '"send";q=100000;w=60');
  assert.match(send.headers.get('ratelimit') ?? '', /^"send";r=99999;t=\d+$/);
});

test('keyset pages neither skip nor repeat a message while sends are being accepted', async () => {
  const tenant = await tenantWithTemplate('pages');
  const before: number[] = [];
  for (let index = 0; index < 24; index += 1) before.push(await sendOne(tenant, `page${index}@example.com`));
  const seen: number[] = [];
  const sentMeanwhile: number[] = [];
  let cursor: string | null = null;
  let pages = 0;
  do {
    const query: string = cursor === null ? '?limit=5' : `?limit=5&cursor=${encodeURIComponent(cursor)}`;
    // New messages are accepted while each page is read, and between pages.
    const [page, ...accepted] = await Promise.all([read(tenant, `/api/v1/messages/${query}`), sendOne(tenant), sendOne(tenant)]);
    sentMeanwhile.push(...accepted);
    assert.equal(page.status, 200, page.text);
    const results = page.body.results as Array<Record<string, unknown>>;
    assert.ok(results.length <= 5);
    seen.push(...results.map((message) => message.message_id as number));
    cursor = page.body.next as string | null;
    if (cursor !== null) assert.doesNotMatch(cursor, /^\d+$/, 'the cursor is opaque');
    pages += 1;
  } while (cursor !== null && pages < 50);
  assert.equal(new Set(seen).size, seen.length, 'no message is repeated');
  const expected = [...before].reverse();
  // The first page may already hold messages accepted while it was read; every later one continues below the last.
  const older = seen.filter((id) => !sentMeanwhile.includes(id));
  assert.deepEqual(older, expected, 'every message accepted before the listing appears once, newest first');
});

test('filters narrow the listing, and a bad one is 422 naming every parameter at fault', async () => {
  const tenant = await tenantWithTemplate('filters');
  await system.putTemplate(tenant.projectId, 'receipt');
  const first = await sendOne(tenant, 'Grace@Example.com');
  const receipt = await system.send(tenant, validBody('receipt', { to: 'linus@example.com' }));
  const ids = (response: HttpResult) => (response.body.results as Array<Record<string, unknown>>).map((message) => message.message_id);
  assert.deepEqual(ids(await read(tenant, '/api/v1/messages/?to=grace@example.com')), [first]);
  assert.deepEqual(ids(await read(tenant, '/api/v1/messages/?template=receipt')), [receipt.body.message_id]);
  assert.deepEqual(ids(await read(tenant, '/api/v1/messages/?created_before=2000-01-01T00:00:00Z')), []);
  assert.equal(
    ids(await read(tenant, `/api/v1/messages/?created_after=${encodeURIComponent(new Date(Date.now() - 3_600_000).toISOString())}&limit=100`)).length,
    2,
  );
  assert.deepEqual(ids(await read(tenant, '/api/v1/messages/?status=failed')), []);

  const refused = await read(tenant, '/api/v1/messages/?status=lost&limit=0&created_after=yesterday&template=a%20b&page=2');
  assertFieldErrors(refused, ['created_after', 'limit', 'page', 'status', 'template']);
  assertFieldErrors(await read(tenant, '/api/v1/messages/?limit=101&limit=2'), ['limit']);
  assertFieldErrors(await read(tenant, `/api/v1/messages/?cursor=${first}`), ['cursor']);
  const spanish = await read(tenant, '/api/v1/messages/?status=lost', { 'accept-language': 'es' });
  assertFieldErrors(spanish, ['status']);
  assert.equal(spanish.headers.get('content-language'), 'es');
  assert.match(spanish.headers.get('ratelimit') ?? '', /^"read";/, 'a refused filter is counted against the read bucket');
});
