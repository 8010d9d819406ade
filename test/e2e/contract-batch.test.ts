// docs/integrators.md "Batch sends" against the running system: POST /api/v1/send/batch/ judges each item like a send
// and answers 200 with one entry per item; the whole request is refused only for what concerns all of its items; the
// rate and the quota count accepted items, covering the first ones when they cover only part; accepted items commit in
// one transaction; an Idempotency-Key replays the whole answer and is shared with single sends. Every response is
// also checked against the OpenAPI document the gateway serves.
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { after, before, test } from 'node:test';
import { assertCoded, assertDetailOnly, assertEveryResponseHeaders, assertFieldErrors, batchResultsProblem, writtenRows } from '../harness/contract-shapes.ts';
import { openApiResponseCheck, type ResponseCheck } from '../harness/openapi.ts';
import { rawRequest } from '../harness/raw-http.ts';
import { type HttpResult, type System, startSystem, type Tenant } from '../harness/system.ts';
import { anotherKey, validBody } from '../harness/tenants.ts';
import { waitFor } from '../harness/wait.ts';

let system: System;
let checkResponse: ResponseCheck;
let tenant: Tenant;

before(async () => {
  // The 5 MiB batch (500 items in one transaction) can take longer than the default 2 s gRPC deadline when the machine
  // running the suite is busy: what it proves is the size limits, not the latency.
  system = await startSystem({ env: { NOTIFY_PUBLIC_SEND_RATE: '100000/min', GRPC_DEADLINE: '15s' } });
  const served = await system.request('/api/v1/openapi.json', { method: 'GET' });
  checkResponse = openApiResponseCheck(served.body);
  tenant = await tenantWithTemplates('batch');
});

after(async () => {
  await system?.stop();
});

async function tenantWithTemplates(name: string): Promise<Tenant> {
  const created = await system.createTenant(`${name}-${randomUUID().slice(0, 6)}`);
  await system.putTemplate(created.projectId, 'welcome');
  await system.putTemplate(created.projectId, 'retired', { active: false });
  return created;
}

function headersOf(key: Pick<Tenant, 'apiKey' | 'organizationId'>, extra: Record<string, string> = {}): Record<string, string> {
  return { authorization: `Api-Key ${key.apiKey}`, 'x-organization-id': String(key.organizationId), 'content-type': 'application/json', ...extra };
}

/** POST /api/v1/send/batch/, its answer checked against the served OpenAPI document and, on 200, the entry shapes. */
async function sendBatch(
  key: Pick<Tenant, 'apiKey' | 'organizationId'>,
  body: unknown,
  extra: Record<string, string> = {},
  path = '/api/v1/send/batch/',
): Promise<HttpResult> {
  const response = await system.request(path, { method: 'POST', headers: headersOf(key, extra), body: typeof body === 'string' ? body : JSON.stringify(body) });
  assert.deepEqual(checkResponse('POST', '/api/v1/send/batch', response), [], `${response.status} ${response.text}`);
  assertEveryResponseHeaders(response);
  if (response.status === 200) assert.equal(batchResultsProblem(response.body.results), undefined, response.text);
  return response;
}

type Entry = Record<string, unknown> & { index: number; status: number };
const entries = (response: HttpResult): Entry[] => response.body.results as Entry[];
const statuses = (response: HttpResult): number[] => entries(response).map((entry) => entry.status);
const acceptedIds = (response: HttpResult): number[] => entries(response).flatMap((entry) => (entry.status === 202 ? [entry.message_id as number] : []));
const to = (n: number): Record<string, unknown> => validBody('welcome', { to: `batch${n}-${randomUUID().slice(0, 8)}@example.com` });

/**
 * How many transactions wrote the messages' first event (`queued`, attempt 0), and how many there are. The messages'
 * own rows cannot tell: the mailers update them (sending, sent) as soon as the jobs are published, each in its own
 * transaction, while the first event, written with the message, is never updated.
 */
async function acceptanceTransactions(ids: readonly number[]): Promise<{ transactions: number; queued: number }> {
  const rows = await system.db.query<{ transactions: number; queued: number }>(
    `SELECT count(DISTINCT xmin::text)::int AS transactions, count(*)::int AS queued FROM message_events
      WHERE message_id = ANY($1::bigint[]) AND state = 'queued' AND attempt = 0`,
    [ids],
  );
  return rows.rows[0] ?? { transactions: -1, queued: -1 };
}

/** notify_send_outcomes_total of the gateway, by outcome. */
async function sendOutcomes(): Promise<Record<string, number>> {
  const text = await (await fetch(`http://127.0.0.1:${system.stack.ports.metrics.gateway}/metrics`)).text();
  return Object.fromEntries(
    [...text.matchAll(/^notify_send_outcomes_total\{[^}]*outcome="(\w+)"[^}]*\} (\d+)$/gm)].map((match) => [match[1], Number(match[2])]),
  );
}

test("each item is judged like a send: 202 entries carry a send 202, refusals their own errors, in order and in the caller's language", async () => {
  const before = await writtenRows(system.db);
  const outcomesBefore = await sendOutcomes();
  const response = await sendBatch(
    tenant,
    {
      messages: [
        to(1),
        validBody('no-such-template'),
        validBody('retired'),
        { ...validBody('welcome'), to: 'not an address', channel: 'sms' },
        'not an object',
        to(2),
      ],
    },
    { 'accept-language': 'es' },
  );
  assert.equal(response.status, 200, response.text);
  assert.equal(response.headers.get('content-language'), 'es');
  assert.match(response.headers.get('ratelimit') ?? '', /^"send";r=\d+;t=\d+$/);
  const [first, missing, retired, fields, notObject, last] = entries(response);
  assert.deepEqual(statuses(response), [202, 404, 422, 422, 422, 202]);
  assert.deepEqual(Object.keys(first ?? {}).sort(), ['celery_task_id', 'idempotent_replay', 'index', 'message_id', 'message_status', 'status']);
  assert.equal(first?.message_status, 'queued');
  assert.equal(first?.idempotent_replay, false);
  assert.deepEqual(missing, {
    index: 1,
    status: 404,
    code: 'template_not_found',
    errors: { template: ['No existe ninguna plantilla con este identificador en el proyecto de esta clave de API.'] },
  });
  assert.deepEqual(retired, { index: 2, status: 422, errors: { template: ['Esta plantilla está inactiva.'] } });
  assert.deepEqual(Object.keys(fields?.errors as object).sort(), ['channel', 'to']);
  assert.deepEqual(notObject, { index: 4, status: 422, errors: { non_field_errors: ['Se esperaba un objeto JSON.'] } });
  assert.equal(last?.index, 5);

  // Written: exactly the accepted items, in one transaction, each a message of its own with its job.
  const ids = acceptedIds(response);
  assert.deepEqual(await writtenRows(system.db), { messages: before.messages + 2, idempotency: before.idempotency });
  assert.deepEqual(await acceptanceTransactions(ids), { transactions: 1, queued: 2 });
  // Each item counts as a send in notify_send_outcomes_total.
  const outcomesAfter = await sendOutcomes();
  assert.equal((outcomesAfter.accepted ?? 0) - (outcomesBefore.accepted ?? 0), 2);
  assert.equal((outcomesAfter.refused ?? 0) - (outcomesBefore.refused ?? 0), 4);
  for (const id of ids) {
    const read = await system.request(`/api/v1/messages/${id}/`, { method: 'GET', headers: headersOf(tenant) });
    assert.equal(read.status, 200, read.text);
  }
});

test('an item whose data the database cannot store (U+0000) is a 422 on `data`; the others are still accepted together', async () => {
  const response = await sendBatch(
    tenant,
    `{"messages": [${JSON.stringify(to(1))}, {"template": "welcome", "to": "nul@example.com", "channel": "email", "data": {"name": "\\u0000"}}, ${JSON.stringify(to(2))}]}`,
  );
  assert.deepEqual(statuses(response), [202, 422, 202]);
  assert.deepEqual(entries(response)[1], {
    index: 1,
    status: 422,
    errors: { data: ['The data holds a value that cannot be stored, such as the character U+0000.'] },
  });
  assert.equal((await acceptanceTransactions(acceptedIds(response))).transactions, 1);
});

test('the whole request is refused only for what concerns all of its items, and then writes nothing', async () => {
  const before = await writtenRows(system.db);
  const valid = { messages: [to(3)] };
  assertDetailOnly(await sendBatch({ ...tenant, apiKey: 'nk_nope.nope' }, valid), 401);
  assertCoded(await sendBatch({ ...tenant, organizationId: 0 }, valid), 400, 'invalid_header');
  const stranger = await tenantWithTemplates('batch-stranger');
  assertCoded(await sendBatch({ ...tenant, organizationId: stranger.organizationId }, valid), 403, 'permission_denied');
  assertCoded(await sendBatch(tenant, valid, { 'content-type': 'text/plain' }), 415, 'unsupported_media_type');
  assertCoded(await sendBatch(tenant, '{"messages": ['), 400, 'parse_error');
  assertCoded(await sendBatch(tenant, '[]'), 400, 'parse_error');
  assertCoded(await sendBatch(tenant, valid, { 'idempotency-key': 'not-a-uuid' }), 400, 'invalid_header');
  assertFieldErrors(await sendBatch(tenant, {}), ['messages']);
  assertFieldErrors(await sendBatch(tenant, { messages: [] }), ['messages']);
  assertFieldErrors(await sendBatch(tenant, { messages: to(4) }), ['messages']);
  assertFieldErrors(await sendBatch(tenant, { messages: [to(5)], api_key: 'x' }), ['api_key']);
  const tooMany = await sendBatch(tenant, { messages: Array.from({ length: 501 }, (_, i) => to(i)) }, { 'accept-language': 'es' });
  assert.deepEqual(tooMany.body, { messages: ['Un lote puede contener como máximo 500 mensajes.'] });
  // 413 from Content-Length, before a byte of the body: the batch limit is NOTIFY_MAX_BATCH_BODY_BYTES, 5 MiB by default.
  const tooLarge = await rawRequest(system.gatewayUrl, {
    path: '/api/v1/send/batch/',
    headers: [
      ['Authorization', `Api-Key ${tenant.apiKey}`],
      ['X-Organization-ID', String(tenant.organizationId)],
      ['Content-Type', 'application/json'],
      ['Content-Length', String(5 * 1024 * 1024 + 1)],
    ],
    withholdBody: true,
    timeoutMs: 5_000,
  });
  assertCoded(tooLarge, 413, 'payload_too_large');
  assert.deepEqual(checkResponse('POST', '/api/v1/send/batch', tooLarge), []);
  assert.deepEqual(await writtenRows(system.db), before);

  // A batch above the single send's 256 KiB limit is read (it has its own limit), and served without the trailing slash.
  const big = { messages: Array.from({ length: 3 }, (_, i) => ({ ...to(i), data: { name: 'x'.repeat(100_000) } })) };
  assert.deepEqual(statuses(await sendBatch(tenant, big, {}, '/api/v1/send/batch')), [202, 202, 202]);
});

test("the largest batch body the gateway reads reaches dispatch-svc whole (over gRPC's default 4 MiB); one byte more is 413", async () => {
  const limit = 5 * 1024 * 1024;
  // 500 items of about 10 KB each, padded with whitespace to exactly NOTIFY_MAX_BATCH_BODY_BYTES.
  const messages = Array.from({ length: 500 }, (_, i) => ({ ...to(i), data: { name: 'x'.repeat(10_300) } }));
  const exact = JSON.stringify({ messages }).padEnd(limit, ' ');
  assert.equal(Buffer.byteLength(exact), limit);
  const whole = await sendBatch(tenant, exact);
  assert.equal(whole.status, 200, whole.text.slice(0, 300));
  assert.deepEqual(new Set(statuses(whole)), new Set([202]));
  assert.equal(statuses(whole).length, 500);
  const before = await writtenRows(system.db);
  // The 413 comes from Content-Length, before a byte of the body is read: the body is withheld, since the gateway
  // closes the connection after its answer and a client still writing could meet that close before reading the 413.
  const over = await rawRequest(system.gatewayUrl, {
    path: '/api/v1/send/batch/',
    headers: [
      ['Authorization', `Api-Key ${tenant.apiKey}`],
      ['X-Organization-ID', String(tenant.organizationId)],
      ['Content-Type', 'application/json'],
      ['Content-Length', String(limit + 1)],
    ],
    withholdBody: true,
  });
  assertCoded(over, 413, 'payload_too_large');
  assert.deepEqual(await writtenRows(system.db), before);
});

test('an item whose job could not fit in a NATS message is a 413 payload_too_large entry, written nowhere; the others are accepted', async () => {
  const before = await writtenRows(system.db);
  const oversized = { ...to(1), data: { name: 'x'.repeat(2 * 1024 * 1024) } };
  const response = await sendBatch(tenant, { messages: [to(0), oversized, to(2)] }, { 'accept-language': 'es' });
  assert.deepEqual(statuses(response), [202, 413, 202]);
  const refused: Record<string, unknown> = entries(response)[1] ?? {};
  assert.equal(refused.code, 'payload_too_large');
  assert.match(
    String((refused.errors as Record<string, string[]>).non_field_errors?.[0]),
    /^El mensaje es demasiado grande para ponerlo en cola: sus datos y su plantilla superan los \d+ bytes\.$/,
  );
  const after = await writtenRows(system.db);
  assert.equal(after.messages, before.messages + 2);
  // Nothing waits in the outbox for a publish that could never succeed.
  await waitFor(async () => (await system.db.query<{ n: number }>('SELECT count(*)::int AS n FROM outbox')).rows[0]?.n === 0, {
    timeoutMs: 15_000,
    what: 'the outbox to be emptied',
  });
});

test('the per-key rate covers the first items: the rest are 429 entries, refused items are given back, and an empty window is a 429 for all', async () => {
  const key = await anotherKey(system, tenant, 'batch-rate');
  await system.db.query('UPDATE api_keys SET send_rate = $1 WHERE id = $2', ['10/hour', key.keyId]);
  // 4 items, 2 refused: the batch costs its 2 accepted items.
  const mixed = await sendBatch(key, { messages: [to(1), validBody('no-such-template'), to(2), validBody('retired')] });
  assert.deepEqual(statuses(mixed), [202, 404, 202, 422]);
  assert.match(mixed.headers.get('ratelimit') ?? '', /^"send";r=8;t=\d+$/);
  assert.equal(mixed.headers.get('ratelimit-policy'), '"send";q=10;w=3600');
  // 8 left for 11 valid items (an invalid one takes nothing): the first 8 are accepted, the last 3 throttled.
  const over = await sendBatch(key, {
    messages: [...Array.from({ length: 5 }, (_, i) => to(i)), { template: 'welcome' }, ...Array.from({ length: 6 }, (_, i) => to(i))],
  });
  assert.deepEqual(statuses(over), [202, 202, 202, 202, 202, 422, 202, 202, 202, 429, 429, 429]);
  const throttled: Record<string, unknown> = entries(over)[11] ?? {};
  assert.equal(throttled.code, 'throttled');
  assert.ok(Number(throttled.retry_after) >= 1 && Number(throttled.retry_after) <= 3600);
  assert.match(
    String((throttled.errors as Record<string, string[]>).non_field_errors?.[0]),
    new RegExp(`Expected available in ${String(throttled.retry_after)} seconds`),
  );
  assert.match(over.headers.get('ratelimit') ?? '', /^"send";r=0;t=\d+$/);
  // Nothing left: the request is throttled as a whole, like a send.
  const none = await sendBatch(key, { messages: [to(1)] });
  assertDetailOnly(none, 429);
  assert.ok(Number(none.headers.get('retry-after')) >= 1);
  assert.equal((await system.send(key, to(1))).status, 429, 'single sends share the bucket');
});

test('the monthly quota covers the first items: the rest are 403 plan_blocked entries; a used-up quota refuses the whole request', async () => {
  const quota = await tenantWithTemplates('batch-quota');
  await system.authAdmin.call('UpdatePlan', { id: quota.planId, monthlyQuota: 3 });
  const response = await sendBatch(quota, { messages: Array.from({ length: 5 }, (_, i) => to(i)) });
  assert.deepEqual(statuses(response), [202, 202, 202, 403, 403]);
  assert.deepEqual(entries(response)[4], {
    index: 4,
    status: 403,
    code: 'plan_blocked',
    errors: { non_field_errors: ["The organization's plan does not allow more sends."] },
  });
  const used = await system.db.query<{ n: number }>('SELECT count(*)::int AS n FROM messages WHERE organization_id = $1', [quota.organizationId]);
  assert.equal(used.rows[0]?.n, 3);
  assertCoded(await sendBatch(quota, { messages: [to(9)] }), 403, 'plan_blocked');
});

test('an Idempotency-Key replays the whole answer; another body, or the key of a single send, is 422 on Idempotency-Key', async () => {
  const key = randomUUID();
  const body = { messages: [to(1), validBody('no-such-template'), to(2)] };
  const first = await sendBatch(tenant, body, { 'idempotency-key': key });
  assert.equal(first.headers.get('idempotent-replayed'), null);
  const before = await writtenRows(system.db);
  // The same JSON in another key order is the same batch.
  const reordered = JSON.stringify({ messages: body.messages.map((message) => Object.fromEntries(Object.entries(message).reverse())) });
  const replay = await sendBatch(tenant, reordered, { 'idempotency-key': key.toUpperCase() });
  assert.equal(replay.status, 200);
  assert.equal(replay.headers.get('idempotent-replayed'), 'true');
  assert.deepEqual(
    entries(replay),
    entries(first).map((entry) => (entry.status === 202 ? { ...entry, idempotent_replay: true } : entry)),
  );
  assert.deepEqual(await writtenRows(system.db), before, 'a replay writes nothing');

  assertFieldErrors(await sendBatch(tenant, { messages: [to(3)] }, { 'idempotency-key': key }), ['Idempotency-Key']);
  const single = await system.send(tenant, to(4), { 'idempotency-key': key });
  assertFieldErrors(single, ['Idempotency-Key']);
  const sendKey = randomUUID();
  assert.equal((await system.send(tenant, to(5), { 'idempotency-key': sendKey })).status, 202);
  assertFieldErrors(await sendBatch(tenant, body, { 'idempotency-key': sendKey }), ['Idempotency-Key']);
});

test("an item's send_at, tags and metadata apply as on a send: the entry is scheduled with its time, the message keeps its labels", async () => {
  const sendAt = new Date(Date.now() + 3_600_000);
  const response = await sendBatch(tenant, {
    messages: [
      { ...to(40), send_at: sendAt.toISOString(), tags: ['batch-later'], metadata: { order_id: 'B-40' } },
      { ...to(41), tags: ['batch-now'] },
      { ...to(42), send_at: new Date(Date.now() - 60_000).toISOString() },
    ],
  });
  assert.equal(response.status, 200, response.text);
  const [later, now, past] = entries(response);
  assert.deepEqual([later?.message_status, later?.send_at], ['scheduled', sendAt.toISOString()]);
  assert.deepEqual([now?.message_status, 'send_at' in (now ?? {})], ['queued', false]);
  assert.deepEqual([past?.status, Object.keys((past?.errors ?? {}) as object)], [422, ['send_at']]);
  const read = async (id: unknown): Promise<HttpResult> => system.request(`/api/v1/messages/${String(id)}/`, { method: 'GET', headers: headersOf(tenant) });
  const scheduled = await read(later?.message_id);
  assert.deepEqual(
    [scheduled.body.status, scheduled.body.send_at, scheduled.body.tags, scheduled.body.metadata],
    ['scheduled', sendAt.toISOString(), ['batch-later'], { order_id: 'B-40' }],
    scheduled.text,
  );
  assert.deepEqual((await read(now?.message_id)).body.tags, ['batch-now']);
});
