// docs/contract.md "Order of checks" row 5 (plan: suspension and monthly quota), row 10 and the "Idempotency" section, and the OpenAPI
// document, against the running system. Every response in this file is also checked against the document it serves.
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { after, before, test } from 'node:test';
import { type JetStreamManager, jetstreamManager } from '@nats-io/jetstream';
import { connect, type NatsConnection } from '@nats-io/transport-node';
import { topology } from '@notify/proto';
import { openApiResponseCheck, type ResponseCheck } from '../harness/openapi.ts';
import { infrastructure } from '../harness/resources.ts';
import { metricValue } from '../harness/service-metrics.ts';
import { type HttpResult, type System, startSystem, type Tenant } from '../harness/system.ts';
import { waitFor } from '../harness/wait.ts';

/** NOTIFY_IDEMPOTENCY_TTL of this system: short, so that the window's end can be watched. */
const idempotencyTtlMs = 2_000;
const sendPath = '/api/v1/send/';

let system: System;
let nats: NatsConnection;
let jsm: JetStreamManager;
let checkResponse: ResponseCheck;

before(async () => {
  system = await startSystem({ env: { NOTIFY_IDEMPOTENCY_TTL: `${idempotencyTtlMs}ms`, NOTIFY_PUBLIC_SEND_RATE: '100000/min' } });
  nats = await connect({ servers: infrastructure.natsUrl });
  jsm = await jetstreamManager(nats);
  const served = await system.request('/api/v1/openapi.json', { method: 'GET' });
  checkResponse = openApiResponseCheck(served.body);
});

after(async () => {
  await nats?.close();
  await system?.stop();
});

async function tenantWithTemplate(name: string): Promise<Tenant> {
  const tenant = await system.createTenant(`${name}-${randomUUID().slice(0, 6)}`);
  await system.putTemplate(tenant.projectId, 'welcome');
  return tenant;
}

const body = (overrides: Record<string, unknown> = {}) => ({
  template: 'welcome',
  to: 'ada@example.com',
  channel: 'email',
  data: { name: 'Ada', order: { id: 7, items: [1, 2] } },
  ...overrides,
});

/** A send whose response is checked against the OpenAPI document before the test looks at it. */
async function send(tenant: Tenant, payload: unknown, headers: Record<string, string> = {}): Promise<HttpResult> {
  const response = await system.send(tenant, payload, headers);
  assert.deepEqual(checkResponse('POST', sendPath, response), [], `${response.status} ${response.text}`);
  return response;
}

const sendWithKey = (tenant: Tenant, key: string, payload: unknown) => send(tenant, payload, { 'Idempotency-Key': key });

const notifyctl = async (...args: string[]): Promise<void> => void (await system.notifyctlOk(...args));

async function count(sql: string, values: unknown[]): Promise<number> {
  const { rows } = await system.db.query<{ n: number }>(`SELECT count(*)::int AS n FROM ${sql}`, values);
  return rows[0]?.n ?? -1;
}

/** Accepted messages of the organization this month, as dispatch-svc counts them for the quota. */
async function usage(tenant: Tenant): Promise<number> {
  const { rows } = await system.db.query<{ accepted: number }>(
    `SELECT accepted FROM organization_usage WHERE organization_id = $1 AND month = date_trunc('month', now() AT TIME ZONE 'UTC')::date`,
    [tenant.organizationId],
  );
  return rows[0]?.accepted ?? 0;
}

/** Jobs JetStream ever stored: the stream's last sequence, unaffected by the mailer consuming them. */
async function jobsStored(): Promise<number> {
  return (await jsm.streams.info(topology(system.resources.natsPrefix).jobsStream)).state.last_seq;
}

/** Sends until the answer has `status`, for at most 2 seconds (how fast a plan change must reach every request). */
async function sendUntil(tenant: Tenant, status: number): Promise<HttpResult> {
  const changedAt = Date.now();
  let response = await send(tenant, body());
  while (response.status !== status && Date.now() - changedAt < 2_000) {
    await new Promise((resolve) => setTimeout(resolve, 50));
    response = await send(tenant, body());
  }
  assert.equal(response.status, status, `still ${response.status} ${Date.now() - changedAt} ms after the plan changed: ${response.text}`);
  return response;
}

function assertPlanBlocked(response: HttpResult): void {
  assert.equal(response.status, 403, response.text);
  assert.equal(response.body.code, 'plan_blocked');
  assert.deepEqual(Object.keys(response.body).sort(), ['code', 'detail']);
}

test('the OpenAPI document is served at /api/v1/openapi.json, parses, and is OpenAPI 3.1 with the send operation', async () => {
  const response = await system.request('/api/v1/openapi.json', { method: 'GET' });
  assert.equal(response.status, 200);
  assert.match(response.headers.get('content-type') ?? '', /^application\/json/);
  const document = JSON.parse(response.text) as { openapi: string; paths: Record<string, { post?: { responses: Record<string, unknown> } }> };
  assert.match(document.openapi, /^3\.1\.\d+$/);
  assert.ok(document.paths[sendPath]?.post?.responses['202']);
});

test('live 202, 400, 401, 404, 415 and 422 answers match the documented schemas, and a wrong answer would not', async () => {
  const tenant = await tenantWithTemplate('openapi');
  const answers = [
    await send(tenant, body()),
    await send(tenant, '{"template":'),
    await send({ ...tenant, apiKey: 'nk_unknown.key' }, body()),
    await send(tenant, body({ template: 'nope' })),
    await send(tenant, body(), { 'Content-Type': 'text/plain' }),
    await send(tenant, body({ to: 'not an address', extra: true })),
  ];
  assert.deepEqual(
    answers.map((answer) => answer.status),
    [202, 400, 401, 404, 415, 422],
  );
  // The check is not vacuous: a 202 missing a field, or a 401 with a code, is caught.
  const accepted = answers[0] as HttpResult;
  const { message_id: _dropped, ...incomplete } = accepted.body;
  assert.notDeepEqual(checkResponse('POST', sendPath, { ...accepted, text: JSON.stringify(incomplete) }), []);
  const refused = answers[2] as HttpResult;
  assert.notDeepEqual(checkResponse('POST', sendPath, { ...refused, text: JSON.stringify({ ...refused.body, code: 'x' }) }), []);
});

test('check 5: 50 concurrent sends against a monthly quota of 10 are exactly 10 accepted and 40 refused plan_blocked', async () => {
  const tenant = await tenantWithTemplate('quota');
  await notifyctl('plan', 'update', '--id', String(tenant.planId), '--monthly-quota', '10');
  const [jobsBefore, usageBefore] = [await jobsStored(), await usage(tenant)];
  assert.equal(usageBefore, 0);

  const answers = await Promise.all(Array.from({ length: 50 }, (_, i) => send(tenant, body({ data: { name: `n${i}` } }))));
  const accepted = answers.filter((answer) => answer.status === 202);
  // Exact, not merely bounded: requests in flight together may all pass the gateway's early usage check, but
  // dispatch-svc counts each acceptance under the organization's usage row lock and refuses past the quota.
  assert.equal(accepted.length, 10, answers.map((answer) => answer.status).join(','));
  for (const answer of answers.filter((answer) => answer.status !== 202)) assertPlanBlocked(answer);
  assert.equal(new Set(accepted.map((answer) => answer.body.message_id)).size, 10);
  assert.equal(await count('messages WHERE organization_id = $1', [tenant.organizationId]), 10);
  assert.equal(await usage(tenant), 10);
  assert.equal((await jobsStored()) - jobsBefore, 10);
});

test('check 5 wins over the checks after it: a used-up quota is 403 whatever else is wrong, and is not counted against the rate', async () => {
  const tenant = await tenantWithTemplate('quota-order');
  await notifyctl('plan', 'update', '--id', String(tenant.planId), '--monthly-quota', '1');
  assert.equal((await send(tenant, body())).status, 202);
  const refusals = [
    await send(tenant, body()),
    await send(tenant, body(), { 'Content-Type': 'text/plain' }),
    await send(tenant, 'not json'),
    await send(tenant, body(), { 'Idempotency-Key': 'not-a-uuid' }),
    await send(tenant, body({ to: 'not an address', channel: 'sms' })),
    await send(tenant, body({ template: 'nope' })),
  ];
  for (const refusal of refusals) {
    assertPlanBlocked(refusal);
    assert.equal(refusal.headers.get('ratelimit'), null);
  }
  // Raising the quota with notifyctl takes effect at once.
  await notifyctl('plan', 'update', '--id', String(tenant.planId), '--monthly-quota', '2');
  await sendUntil(tenant, 202);
  assertPlanBlocked(await send(tenant, body()));
  assert.equal(await usage(tenant), 2);
});

test('a plan suspended with notifyctl is refused plan_blocked within 2 seconds, and sends again once resumed', async () => {
  const tenant = await tenantWithTemplate('suspended');
  // Warm every cache on the way with a successful send first.
  assert.equal((await send(tenant, body())).status, 202);
  await notifyctl('plan', 'update', '--id', String(tenant.planId), '--suspended', 'true');
  assertPlanBlocked(await sendUntil(tenant, 403));
  assertPlanBlocked(await send(tenant, 'not json', { 'Content-Type': 'text/plain' }));
  await notifyctl('plan', 'update', '--id', String(tenant.planId), '--suspended', 'false');
  await sendUntil(tenant, 202);
});

test('replays use no quota; once the quota is used up even a replay is plan_blocked, check 5 coming before check 10', async () => {
  const tenant = await tenantWithTemplate('quota-replay');
  await notifyctl('plan', 'update', '--id', String(tenant.planId), '--monthly-quota', '2');
  const key = randomUUID();
  const first = await sendWithKey(tenant, key, body());
  assert.equal(first.status, 202, first.text);
  for (let i = 0; i < 3; i += 1) assert.equal((await sendWithKey(tenant, key, body())).body.idempotent_replay, true);
  assert.equal(await usage(tenant), 1);
  // The second message fits because the replays took nothing.
  assert.equal((await send(tenant, body({ to: 'grace@example.com' }))).status, 202);
  assertPlanBlocked(await send(tenant, body({ to: 'linus@example.com' })));
  assertPlanBlocked(await sendWithKey(tenant, key, body()));
  assert.equal(await usage(tenant), 2);
});

test('a replay of the same JSON in another key order and spacing is the first 202 again, creating no message, job or usage', async () => {
  const tenant = await tenantWithTemplate('replay');
  const key = randomUUID();
  const compact = '{"template":"welcome","to":"ada@example.com","channel":"email","data":{"name":"Ada","order":{"id":7,"items":[1,2]}}}';
  const reordered =
    '{\n  "data": { "order": { "items": [ 1, 2 ], "id": 7 }, "name": "Ada" },\n  "channel" : "email",\t"to": "ada@example.com",\n  "template": "welcome"\n}';
  const first = await sendWithKey(tenant, key, compact);
  assert.equal(first.status, 202, first.text);
  assert.equal(first.body.idempotent_replay, false);
  assert.equal(first.headers.get('idempotent-replayed'), null);
  const [messages, jobs, used] = [await count('messages WHERE organization_id = $1', [tenant.organizationId]), await jobsStored(), await usage(tenant)];

  for (const [payload, headerKey] of [
    [reordered, key],
    [compact, key.toUpperCase()],
  ] as const) {
    const replay = await sendWithKey(tenant, headerKey, payload);
    assert.equal(replay.status, 202, replay.text);
    assert.equal(replay.headers.get('idempotent-replayed'), 'true');
    assert.deepEqual(replay.body, { ...first.body, idempotent_replay: true });
  }
  assert.equal(await count('messages WHERE organization_id = $1', [tenant.organizationId]), messages);
  // The first send's row goes once its job is published, after its answer; no replay writes one again.
  await waitFor(async () => (await count('outbox WHERE message_id = $1', [first.body.message_id])) === 0, {
    timeoutMs: 5_000,
    what: "the first send's outbox row to be deleted",
  });
  assert.equal(await jobsStored(), jobs);
  assert.equal(await usage(tenant), used);
});

test('the same key with another body is 422 on Idempotency-Key, judged before the fields and the template (check 10 before 11-13)', async () => {
  const tenant = await tenantWithTemplate('mismatch');
  const key = randomUUID();
  assert.equal((await sendWithKey(tenant, key, body())).status, 202);
  for (const other of [
    body({ to: 'grace@example.com' }),
    body({ to: 'not an address', extra: 1 }),
    body({ template: 'nope' }),
    { ...body(), data: { name: 'Ada' } },
  ]) {
    const response = await sendWithKey(tenant, key, other);
    assert.equal(response.status, 422, response.text);
    assert.deepEqual(Object.keys(response.body), ['Idempotency-Key']);
    const messages = response.body['Idempotency-Key'];
    assert.ok(Array.isArray(messages) && messages.length === 1 && typeof messages[0] === 'string');
  }
  assert.equal(await count('messages WHERE organization_id = $1', [tenant.organizationId]), 1);
});

test('while the first request is in flight the same key is 409 idempotency_key_in_use with Retry-After: 1', async () => {
  const tenant = await tenantWithTemplate('in-flight');
  const key = randomUUID();
  // Hold the organization's usage row: the first request then waits inside its transaction, holding the key, until
  // this transaction ends. Kept short, well inside GRPC_DEADLINE.
  const holder = await system.db.connect();
  let first: Promise<HttpResult>;
  try {
    await holder.query('BEGIN');
    await holder.query(
      `INSERT INTO organization_usage (organization_id, month, accepted) VALUES ($1, date_trunc('month', now() AT TIME ZONE 'UTC')::date, 0)
       ON CONFLICT (organization_id, month) DO UPDATE SET accepted = organization_usage.accepted`,
      [tenant.organizationId],
    );
    first = sendWithKey(tenant, key, body());
    await waitFor(
      async () =>
        (await count(`pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock' AND query LIKE '%usage%'`, [])) > 0 ? true : undefined,
      { timeoutMs: 1_500, intervalMs: 10, what: 'the first request to wait inside its transaction' },
    );
    for (const payload of [body(), body({ to: 'grace@example.com' })]) {
      const busy = await sendWithKey(tenant, key, payload);
      assert.equal(busy.status, 409, busy.text);
      assert.equal(busy.headers.get('retry-after'), '1');
      assert.equal(busy.body.code, 'idempotency_key_in_use');
      assert.deepEqual(Object.keys(busy.body).sort(), ['code', 'detail']);
    }
    await holder.query('COMMIT');
  } finally {
    await holder.query('ROLLBACK').catch(() => undefined);
    holder.release();
  }
  const accepted = await first;
  assert.equal(accepted.status, 202, accepted.text);
  assert.equal(accepted.body.idempotent_replay, false);
  const replay = await sendWithKey(tenant, key, body());
  assert.deepEqual(replay.body, { ...accepted.body, idempotent_replay: true });
});

test('an Idempotency-Key that is not a UUID is 400 invalid_header', async () => {
  const tenant = await tenantWithTemplate('bad-key');
  for (const key of ['order-42', '123', `${randomUUID()}x`, '{0f8fad5b-d9cb-469f-a165-70867728950e}']) {
    const response = await sendWithKey(tenant, key, body());
    assert.equal(response.status, 400, key);
    assert.equal(response.body.code, 'invalid_header', key);
  }
  assert.equal(await count('messages WHERE organization_id = $1', [tenant.organizationId]), 0);
});

test('a request refused with 4xx stores nothing: corrected and retried under the same key it is accepted', async () => {
  const tenant = await tenantWithTemplate('corrected');
  const key = randomUUID();
  assert.equal((await sendWithKey(tenant, key, body({ to: 'not an address' }))).status, 422);
  assert.equal((await sendWithKey(tenant, key, body({ template: 'nope' }))).status, 404);
  await system.putTemplate(tenant.projectId, 'dormant', { active: false });
  assert.equal((await sendWithKey(tenant, key, body({ template: 'dormant' }))).status, 422);
  assert.equal(await count('idempotency_keys WHERE idempotency_key = $1', [key]), 0);
  const corrected = await sendWithKey(tenant, key, body());
  assert.equal(corrected.status, 202, corrected.text);
  assert.equal(corrected.body.idempotent_replay, false);
  assert.equal((await sendWithKey(tenant, key, body())).body.idempotent_replay, true);
});

test('50 concurrent identical requests with one key make exactly one message and one job; every answer is a 202 sharing its id, or a 409', async (t) => {
  const tenant = await tenantWithTemplate('burst');
  const key = randomUUID();
  const jobs = await jobsStored();
  const startedAt = Date.now();
  const answers = await Promise.all(Array.from({ length: 50 }, () => sendWithKey(tenant, key, body())));
  // The premise of "one message": the whole burst falls inside the idempotency window (2 s here).
  assert.ok(Date.now() - startedAt < idempotencyTtlMs, `the burst took ${Date.now() - startedAt} ms`);
  const accepted = answers.filter((answer) => answer.status === 202);
  const busy = answers.filter((answer) => answer.status === 409);
  assert.equal(accepted.length + busy.length, 50, answers.map((answer) => answer.status).join(','));
  assert.ok(accepted.length >= 1);
  assert.equal(new Set(accepted.map((answer) => answer.body.message_id)).size, 1);
  assert.equal(new Set(accepted.map((answer) => answer.body.celery_task_id)).size, 1);
  assert.equal(accepted.filter((answer) => answer.body.idempotent_replay === false).length, 1);
  for (const answer of busy) assert.equal(answer.headers.get('retry-after'), '1');
  t.diagnostic(`${accepted.length} answers 202 (one first, the rest replays), ${busy.length} answers 409`);
  assert.equal(await count('messages WHERE idempotency_key = $1', [key]), 1);
  assert.equal((await jobsStored()) - jobs, 1);
  assert.equal(await usage(tenant), 1);
});

test('after NOTIFY_IDEMPOTENCY_TTL the key can be used again, for another body too', async () => {
  const tenant = await tenantWithTemplate('ttl');
  const key = randomUUID();
  const first = await sendWithKey(tenant, key, body());
  const acceptedAt = Date.now();
  assert.equal(first.status, 202);
  assert.equal((await sendWithKey(tenant, key, body({ to: 'grace@example.com' }))).status, 422);
  await new Promise((resolve) => setTimeout(resolve, Math.max(0, acceptedAt + idempotencyTtlMs + 200 - Date.now())));
  const again = await sendWithKey(tenant, key, body({ to: 'grace@example.com' }));
  assert.equal(again.status, 202, again.text);
  assert.equal(again.body.idempotent_replay, false);
  assert.notEqual(again.body.message_id, first.body.message_id);
  const replay = await sendWithKey(tenant, key, body({ to: 'grace@example.com' }));
  assert.deepEqual(replay.body, { ...again.body, idempotent_replay: true });
});

test('a replay the gateway answers from memory, without dispatch-svc, ends with its record: after NOTIFY_IDEMPOTENCY_TTL the same body is a new message', async () => {
  const tenant = await tenantWithTemplate('memory');
  const key = randomUUID();
  const judgedByDispatch = async (): Promise<number> => {
    const value = await metricValue(system.stack.ports.metrics.dispatch, 'notify_messages_replayed_total', {});
    assert.ok(value !== undefined, 'dispatch-svc counts the replays it judges');
    return value;
  };
  const first = await sendWithKey(tenant, key, body());
  const acceptedAt = Date.now();
  assert.equal(first.status, 202, first.text);
  const judged = await judgedByDispatch();
  const replay = await sendWithKey(tenant, key, body());
  assert.equal(replay.headers.get('idempotent-replayed'), 'true');
  assert.deepEqual(replay.body, { ...first.body, idempotent_replay: true });
  assert.equal(await judgedByDispatch(), judged, 'the gateway answered the replay itself');

  await new Promise((resolve) => setTimeout(resolve, Math.max(0, acceptedAt + idempotencyTtlMs + 200 - Date.now())));
  const again = await sendWithKey(tenant, key, body());
  assert.equal(again.status, 202, again.text);
  assert.equal(again.body.idempotent_replay, false);
  assert.notEqual(again.body.message_id, first.body.message_id);
  assert.equal(await count('messages WHERE idempotency_key = $1', [key]), 2);
});
