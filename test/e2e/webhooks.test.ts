// Webhooks end to end: a message's transitions become signed webhook requests to real HTTP receivers, each signature
// verified by the `standardwebhooks` library; at least once through a receiver outage and a SIGKILLed sender, one slow
// receiver never delaying another, a secret rotation verifying with either secret, and secrets sealed at rest. The
// public API's test event and rotation (test/e2e/default-system/webhooks-api.suite.ts has the rest of that API) are
// received here, where private targets are allowed.
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { after, before, test } from 'node:test';
import { parseDataKey, webhookSecretSealContext } from '@notify/platform/mail';
import { metricValue } from '../harness/service-metrics.ts';
import { gatewayReachesServices } from '../harness/service-waits.ts';
import { type System, startSystem, type Tenant } from '../harness/system.ts';
import { anotherKey, validBody } from '../harness/tenants.ts';
import { waitFor } from '../harness/wait.ts';
import { startWebhookReceiver, type WebhookReceiver } from '../harness/webhook-receiver.ts';

let system: System;
let tenant: Tenant;
const receivers: WebhookReceiver[] = [];

const newSecret = (): string => `whsec_${randomBytes(24).toString('base64')}`;

before(async () => {
  system = await startSystem({
    env: { NOTIFY_PUBLIC_SEND_RATE: '100000/min', NOTIFY_WEBHOOK_ALLOW_PRIVATE: 'true' },
    // The contract's schedule on a short clock; the timeout and ack wait short enough for a test to outwait them.
    serviceEnv: {
      'webhook-svc': {
        WEBHOOK_RETRY_SCHEDULE: '1s,1s,1s,2s,2s,2s,2s',
        WEBHOOK_TIMEOUT: '3s',
        WEBHOOK_ACK_WAIT: '5s',
        WEBHOOK_CONCURRENCY: '16',
        WEBHOOK_ENDPOINT_CONCURRENCY: '4',
        WEBHOOK_PROJECT_CONCURRENCY: '8',
      },
    },
  });
  tenant = await system.createTenant('webhooks');
  await system.putTemplate(tenant.projectId, 'welcome');
});

after(async () => {
  for (const receiver of receivers) await receiver.stop();
  await system?.stop();
});

/**
 * A receiver and its endpoint (subscribed to message.sent), on a project of its own unless one is given. Its secrets
 * are stored sealed under its id, as dispatch-svc stores them, or in clear as a release that did not seal them did.
 */
async function endpoint(
  options: { projectId?: number; secret?: string; previousSecret?: string; inClear?: boolean } = {},
): Promise<{ receiver: WebhookReceiver; id: number; projectId: number }> {
  const secret = options.secret ?? newSecret();
  const receiver = await startWebhookReceiver(options.previousSecret ? [secret, options.previousSecret] : [secret]);
  receivers.push(receiver);
  const projectId = options.projectId ?? tenant.projectId;
  const id = Number((await system.db.query<{ id: string }>(`SELECT nextval(pg_get_serial_sequence('webhook_endpoints', 'id')) AS id`)).rows[0]?.id);
  const dataKey = parseDataKey(system.stack.env.NOTIFY_DATA_KEY);
  const stored = (value: string | undefined) => (value === undefined || options.inClear ? value : dataKey.seal(value, webhookSecretSealContext(id)));
  const [column, previousColumn] = options.inClear ? ['secret', 'previous_secret'] : ['sealed_secret', 'sealed_previous_secret'];
  await system.db.query(
    `INSERT INTO webhook_endpoints (id, project_id, organization_id, url, event_types, ${column}, ${previousColumn}, previous_secret_expires_at)
     VALUES ($1, $2, $3, $4, '{message.sent}', $5, $6, CASE WHEN $6::text IS NULL THEN NULL ELSE now() + interval '24 hours' END)`,
    [id, projectId, tenant.organizationId, receiver.url, stored(secret), stored(options.previousSecret) ?? null],
  );
  return { receiver, id, projectId };
}

async function sendMessages(count: number): Promise<number[]> {
  const ids: number[] = [];
  for (let index = 0; index < count; index += 1) {
    const response = await system.send(tenant, { template: 'welcome', to: `r${index}@example.com`, channel: 'email', data: { name: 'Ada' } });
    assert.equal(response.status, 202, response.text);
    ids.push(response.body.message_id as number);
  }
  return ids;
}

/** Waits until `receiver` acknowledged a message.sent for each message. */
async function receivedFor(receiver: WebhookReceiver, messageIds: readonly number[], timeoutMs = 20_000) {
  return waitFor(
    () => {
      const got = messageIds.map((id) => receiver.received.find((webhook) => webhook.body.data.message_id === id));
      return got.every((webhook) => webhook !== undefined) ? got.map((webhook) => webhook!) : undefined;
    },
    { timeoutMs, what: `webhooks for messages ${messageIds.join(', ')}` },
  );
}

const attemptsOf = async (endpointId: number) =>
  (
    await system.db.query<{ event_id: string; attempt: number; status_code: number | null; error: string | null }>(
      'SELECT event_id, attempt, status_code, error FROM webhook_attempts WHERE endpoint_id = $1 ORDER BY id',
      [endpointId],
    )
  ).rows;

test('a sent message is one signed webhook that standardwebhooks verifies, with the contract body', async () => {
  const { receiver, id } = await endpoint();
  const [messageId] = await sendMessages(1);
  const [webhook] = await receivedFor(receiver, [messageId!]);
  assert.ok(webhook);
  assert.deepEqual(receiver.unverified, []);
  assert.match(webhook.id, /^evt_\d+$/);
  assert.equal(webhook.body.type, 'message.sent');
  assert.match(String(webhook.body.timestamp), /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);
  assert.deepEqual(Object.keys(webhook.body.data).sort(), [
    'attempt',
    'celery_task_id',
    'message_id',
    'metadata',
    'reason',
    'sequence',
    'smtp_reply',
    'status',
    'tags',
    'template',
    'to',
  ]);
  assert.deepEqual([webhook.body.data.tags, webhook.body.data.metadata], [[], {}], 'a message sent without labels has empty ones');
  assert.equal(webhook.body.data.status, 'sent');
  assert.equal(webhook.body.data.to, 'r0@example.com');
  assert.equal(webhook.body.data.template, 'welcome');
  assert.ok(Math.abs(Number(webhook.timestamp) - Date.now() / 1000) < 30);
  // The sender records the attempt once the receiver's answer is in: just after the receiver saw the request.
  const attempts = await waitFor(
    async () => {
      const rows = await attemptsOf(id);
      return rows.length > 0 ? rows : undefined;
    },
    { timeoutMs: 5_000, what: 'the attempt recorded' },
  );
  assert.equal(attempts.length, 1);
  assert.equal(attempts[0]?.status_code, 204);
  await system.db.query('UPDATE webhook_endpoints SET enabled = false WHERE id = $1', [id]);
});

test('a receiver that never answers does not delay another: every event reaches the other within 2 s', async (t) => {
  const project = (await system.authAdmin.call('CreateProject', { organizationId: tenant.organizationId, name: 'isolation' })).id;
  const key = await system.authAdmin.call('CreateApiKey', { projectId: project, name: 'isolation' });
  await system.putTemplate(project, 'welcome');
  const dead = await endpoint({ projectId: project });
  dead.receiver.answer = () => 'hang';
  const fast = await endpoint({ projectId: project });
  const ids: number[] = [];
  for (let index = 0; index < 12; index += 1) {
    const response = await system.send(
      { apiKey: key.apiKey, organizationId: tenant.organizationId },
      { template: 'welcome', to: `iso${index}@example.com`, channel: 'email', data: { name: 'Ada' } },
    );
    assert.equal(response.status, 202, response.text);
    ids.push(response.body.message_id as number);
  }
  const got = await receivedFor(fast.receiver, ids);
  const { rows } = await system.db.query<{ id: string; created: Date }>(
    'SELECT id, created_at AS created FROM webhook_events WHERE message_id = ANY ($1::bigint[])',
    [ids],
  );
  const createdAt = new Map(rows.map((row) => [`evt_${row.id}`, row.created.getTime()]));
  const delays = got.map((webhook) => webhook.at - (createdAt.get(webhook.id) ?? 0));
  t.diagnostic(`delays after each event was recorded: ${delays.join(', ')} ms`);
  assert.ok(Math.max(...delays) < 2_000, `delays after each event was recorded: ${delays.join(', ')} ms`);
  // Meanwhile the dead receiver was sent requests, never more than its share (WEBHOOK_ENDPOINT_CONCURRENCY) at once.
  assert.ok(dead.receiver.maxOpen() > 0 && dead.receiver.maxOpen() <= 4, `most requests open at once at the dead receiver: ${dead.receiver.maxOpen()}`);
  await system.db.query('UPDATE webhook_endpoints SET enabled = false WHERE id = ANY ($1::bigint[])', [[dead.id, fast.id]]);
  await dead.receiver.stop();
});

test("a project whose endpoints all hang holds at most its share of the sender: another project's webhooks keep their latency", async (t) => {
  const project = (await system.authAdmin.call('CreateProject', { organizationId: tenant.organizationId, name: 'stalled' })).id;
  const key = await system.authAdmin.call('CreateApiKey', { projectId: project, name: 'stalled' });
  await system.putTemplate(project, 'welcome');
  // Five endpoints may hold 20 requests (4 each), more than the sender's 16; their project may hold 8.
  const hanging = await Promise.all(Array.from({ length: 5 }, () => endpoint({ projectId: project })));
  for (const { receiver } of hanging) receiver.answer = () => 'hang';
  const fast = await endpoint();
  for (let index = 0; index < 12; index += 1) {
    const response = await system.send(
      { apiKey: key.apiKey, organizationId: tenant.organizationId },
      { template: 'welcome', to: `stalled${index}@example.com`, channel: 'email', data: { name: 'Ada' } },
    );
    assert.equal(response.status, 202, response.text);
  }
  const openAtHanging = () => hanging.reduce((open, { receiver }) => open + receiver.open(), 0);
  let mostOpen = 0;
  const sampling = setInterval(() => (mostOpen = Math.max(mostOpen, openAtHanging())), 20);
  try {
    await waitFor(() => openAtHanging() >= 8, { timeoutMs: 15_000, what: "the stalled project's requests open" });
    // The other project's messages while the stalled one's requests hang, time out and are made again.
    const ids: number[] = [];
    for (let index = 0; index < 6; index += 1) {
      ids.push(...(await sendMessages(1)));
      await new Promise((resolve) => setTimeout(resolve, 500));
    }
    const got = await receivedFor(fast.receiver, ids);
    const { rows } = await system.db.query<{ id: string; created: Date }>(
      'SELECT id, created_at AS created FROM webhook_events WHERE message_id = ANY ($1::bigint[])',
      [ids],
    );
    const createdAt = new Map(rows.map((row) => [`evt_${row.id}`, row.created.getTime()]));
    const delays = got.map((webhook) => webhook.at - (createdAt.get(webhook.id) ?? 0));
    t.diagnostic(`delays after each event was recorded: ${delays.join(', ')} ms; most requests open at once at the stalled project's receivers: ${mostOpen}`);
    assert.ok(Math.max(...delays) < 2_000, `delays after each event was recorded: ${delays.join(', ')} ms`);
    assert.ok(mostOpen <= 8, `most requests open at once at the stalled project's receivers: ${mostOpen} (WEBHOOK_PROJECT_CONCURRENCY: 8)`);
  } finally {
    clearInterval(sampling);
  }
  await system.db.query('UPDATE webhook_endpoints SET enabled = false WHERE id = ANY ($1::bigint[])', [[...hanging.map(({ id }) => id), fast.id]]);
  for (const { receiver } of hanging) await receiver.stop();
});

test('a burst to one endpoint waits in the sender for its requests: none of it is put back to come again seconds later', async () => {
  const { receiver, id } = await endpoint();
  // The burst: events made while no sender runs, every one relayed to JetStream before the sender starts again.
  system.stack.kill('webhook-svc', 'SIGTERM');
  await system.stack.exited('webhook-svc');
  const ids = await sendMessages(120);
  await waitFor(
    async () => {
      const { rows } = await system.db.query<{ relayed: number }>(
        `SELECT count(*) FILTER (WHERE e.published_at IS NOT NULL)::int AS relayed FROM webhook_deliveries d JOIN webhook_events e ON e.id = d.event_id WHERE d.endpoint_id = $1`,
        [id],
      );
      return rows[0]?.relayed === ids.length ? true : undefined;
    },
    { timeoutMs: 30_000, what: 'every event of the burst relayed' },
  );
  await system.stack.restart('webhook-svc');
  await receivedFor(receiver, ids, 30_000);
  // Four requests at a time (WEBHOOK_ENDPOINT_CONCURRENCY), the rest parked at the endpoint's pace: more than the 32
  // (eight per slot) parked at most before, when the others were put back for 1-3 s, and again when they came back.
  const busy = (action: string) => metricValue(system.stack.ports.metrics.webhook, 'notify_webhook_endpoint_busy_total', { action });
  assert.equal(await busy('put_back'), 0);
  const parked = (await busy('parked')) ?? 0;
  assert.ok(parked > 32, `deliveries parked: ${parked}`);
  await system.db.query('UPDATE webhook_endpoints SET enabled = false WHERE id = $1', [id]);
});

test('a receiver down for a while then up gets every event, retried under the same webhook-id', async () => {
  const { receiver, id } = await endpoint();
  await receiver.stop();
  const ids = await sendMessages(3);
  await waitFor(async () => ((await attemptsOf(id)).length >= 6 ? true : undefined), { timeoutMs: 20_000, what: 'two failed attempts per event' });
  await receiver.start();
  const got = await receivedFor(receiver, ids);
  // Each successful attempt is recorded once the receiver's answer is in, just after the receiver saw the request.
  const attempts = await waitFor(
    async () => {
      const rows = await attemptsOf(id);
      return got.every((webhook) => rows.some((attempt) => `evt_${attempt.event_id}` === webhook.id && attempt.status_code === 204)) ? rows : undefined;
    },
    { timeoutMs: 5_000, what: 'the successful attempts recorded' },
  );
  for (const webhook of got) {
    const ofEvent = attempts.filter((attempt) => `evt_${attempt.event_id}` === webhook.id);
    assert.ok(ofEvent.length >= 3, `${webhook.id}: ${JSON.stringify(ofEvent)}`);
    assert.deepEqual(
      ofEvent.map((attempt) => attempt.attempt),
      ofEvent.map((_, index) => index + 1),
    );
    assert.equal(ofEvent.at(-1)?.status_code, 204);
    assert.ok(ofEvent.slice(0, -1).every((attempt) => attempt.status_code === null && attempt.error));
  }
  await system.db.query('UPDATE webhook_endpoints SET enabled = false WHERE id = $1', [id]);
});

test('every attempt of one event carries the same webhook-id, and a 503 with Retry-After is honoured', async () => {
  const { receiver, id } = await endpoint();
  const seen: { id: string; at: number }[] = [];
  receiver.answer = (webhook) => {
    seen.push({ id: webhook.id, at: Date.now() });
    return seen.filter((one) => one.id === webhook.id).length < 3 ? { status: 503, headers: { 'retry-after': '2' } } : { status: 200 };
  };
  const [messageId] = await sendMessages(1);
  const [webhook] = await receivedFor(receiver, [messageId!]);
  const tries = seen.filter((one) => one.id === webhook?.id);
  assert.equal(tries.length, 3);
  // Retry-After (2 s) is later than the schedule's 1 s (± 10 %), so it sets each wait.
  for (let index = 1; index < tries.length; index += 1) assert.ok(tries[index]!.at - tries[index - 1]!.at >= 1_900, `waits ${tries.map((one) => one.at)}`);
  assert.deepEqual(
    (await attemptsOf(id)).map((attempt) => attempt.status_code),
    [503, 503, 200],
  );
  await system.db.query('UPDATE webhook_endpoints SET enabled = false WHERE id = $1', [id]);
});

test('SIGKILL of the sender in the middle of deliveries loses none of them', async () => {
  const { receiver, id } = await endpoint();
  receiver.answer = () => ({ status: 200, delayMs: 1_500 });
  const ids = await sendMessages(6);
  await waitFor(() => (receiver.open() > 0 ? true : undefined), { timeoutMs: 15_000, what: 'a request in flight' });
  system.stack.kill('webhook-svc', 'SIGKILL');
  await system.stack.restart('webhook-svc');
  // The requests the killed sender had open are made again once their claim runs out (WEBHOOK_ACK_WAIT): at least once.
  await waitFor(
    async () => {
      const { rows } = await system.db.query<{ state: string }>(
        `SELECT d.state FROM webhook_deliveries d JOIN webhook_events e ON e.id = d.event_id WHERE d.endpoint_id = $1 AND e.message_id = ANY ($2::bigint[])`,
        [id, ids],
      );
      return rows.length === ids.length && rows.every((row) => row.state === 'succeeded') ? true : undefined;
    },
    { timeoutMs: 30_000, what: 'every delivery succeeded' },
  );
  const got = await receivedFor(receiver, ids);
  // A request repeated after the kill carries the event's webhook-id again, so the receiver can tell it is a repeat.
  const byMessage = new Map<unknown, Set<string>>();
  for (const webhook of receiver.received)
    byMessage.set(webhook.body.data.message_id, (byMessage.get(webhook.body.data.message_id) ?? new Set()).add(webhook.id));
  assert.ok(got.every((webhook) => byMessage.get(webhook.body.data.message_id)?.size === 1));
  await system.db.query('UPDATE webhook_endpoints SET enabled = false WHERE id = $1', [id]);
});

test('after a secret rotation each request verifies with either secret during the overlap', async () => {
  const previous = newSecret();
  const current = newSecret();
  const { receiver, id } = await endpoint({ secret: current, previousSecret: previous });
  const [messageId] = await sendMessages(1);
  const [webhook] = await receivedFor(receiver, [messageId!]);
  assert.deepEqual(webhook?.verifiedWith, [current, previous]);
  assert.equal(webhook?.signature.split(' ').length, 2);

  // Once the overlap is over, only the current secret signs.
  await system.db.query(`UPDATE webhook_endpoints SET previous_secret_expires_at = now() - interval '1 second' WHERE id = $1`, [id]);
  const [later] = await sendMessages(1);
  const [next] = await receivedFor(receiver, [later!]);
  assert.deepEqual(next?.verifiedWith, [current]);
  await system.db.query('UPDATE webhook_endpoints SET enabled = false WHERE id = $1', [id]);
});

test('secrets stored in clear sign until dispatch-svc seals them at start, and sign the same after', async () => {
  const [current, previous] = [newSecret(), newSecret()];
  const { receiver, id } = await endpoint({ secret: current, previousSecret: previous, inClear: true });
  const [beforeSealing] = await sendMessages(1);
  assert.deepEqual((await receivedFor(receiver, [beforeSealing!]))[0]?.verifiedWith, [current, previous]);

  await system.stack.restart('dispatch-svc');
  await gatewayReachesServices(() => system.send(tenant, validBody('no-such-template')));
  const sealed = await waitFor(
    async () => {
      const { rows } = await system.db.query<{ clear: boolean; sealed: boolean }>(
        `SELECT secret IS NOT NULL OR previous_secret IS NOT NULL AS clear, sealed_secret IS NOT NULL AND sealed_previous_secret IS NOT NULL AS sealed FROM webhook_endpoints WHERE id = $1`,
        [id],
      );
      return rows[0]?.clear === false ? rows[0] : undefined;
    },
    { timeoutMs: 15_000, what: 'the secrets sealed' },
  );
  assert.equal(sealed.sealed, true);
  const [afterSealing] = await sendMessages(1);
  assert.deepEqual((await receivedFor(receiver, [afterSealing!]))[0]?.verifiedWith, [current, previous]);
  assert.deepEqual(receiver.unverified, []);
  await system.db.query('UPDATE webhook_endpoints SET enabled = false WHERE id = $1', [id]);
});

test('a replay of an event whose retries are used up gets the whole schedule again', async () => {
  const { receiver, id } = await endpoint();
  receiver.answer = () => ({ status: 500 });
  await sendMessages(1);
  // The first attempt and the schedule's 7 retries, all refused: the delivery fails for good.
  const delivery = async () =>
    (await system.db.query<{ event_id: string; state: string }>('SELECT event_id, state FROM webhook_deliveries WHERE endpoint_id = $1', [id])).rows[0];
  const failed = await waitFor(async () => ((await delivery())?.state === 'failed' ? delivery() : undefined), {
    timeoutMs: 30_000,
    what: 'the delivery failed',
  });
  assert.equal((await attemptsOf(id)).length, 8);

  // The integrator fixed their endpoint, but it still stumbles twice: a replay with one attempt left would fail again.
  let answered = 0;
  receiver.answer = () => (++answered <= 2 ? { status: 500 } : { status: 204 });
  await system.notifyctlOk('webhook', 'replay', '--event', `evt_${failed?.event_id}`);
  await waitFor(async () => ((await delivery())?.state === 'succeeded' ? true : undefined), { timeoutMs: 20_000, what: 'the replay delivered' });
  assert.deepEqual(
    (await attemptsOf(id)).map((attempt) => [attempt.attempt, attempt.status_code]),
    [...Array.from({ length: 10 }, (_, index) => [index + 1, 500]), [11, 204]],
  );
  await system.db.query('UPDATE webhook_endpoints SET enabled = false WHERE id = $1', [id]);
});

test('a 410 disables the endpoint at once, and 5 days of failures disable it too', async () => {
  const gone = await endpoint();
  gone.receiver.answer = () => ({ status: 410 });
  const failing = await endpoint();
  failing.receiver.answer = () => ({ status: 500 });
  await system.db.query(`UPDATE webhook_endpoints SET failing_since = now() - interval '5 days 1 minute' WHERE id = $1`, [failing.id]);
  await sendMessages(1);
  const reasons = await waitFor(
    async () => {
      const { rows } = await system.db.query<{ id: string; enabled: boolean; disabled_reason: string | null }>(
        'SELECT id, enabled, disabled_reason FROM webhook_endpoints WHERE id = ANY ($1::bigint[]) ORDER BY id',
        [[gone.id, failing.id]],
      );
      return rows.every((row) => !row.enabled) ? rows.map((row) => row.disabled_reason) : undefined;
    },
    { timeoutMs: 15_000, what: 'both endpoints disabled' },
  );
  assert.deepEqual(reasons, ['gone', 'failing']);
  assert.equal((await attemptsOf(gone.id)).length, 1);
  const metrics = await (await fetch(`http://127.0.0.1:${system.stack.ports.metrics.webhook}/metrics`)).text();
  assert.match(metrics, /notify_webhook_endpoints_disabled_total\{[^}]*reason="gone"[^}]*\} [1-9]/);
  assert.match(metrics, /notify_webhook_attempts_total\{[^}]*result="succeeded"[^}]*\} [1-9]/);
});

test("the API's test event arrives signed and logged; after the API's rotation both secrets verify it during the overlap", async () => {
  // A project of its own: the other tests' endpoints fill the tenant's.
  const owner = await system.createTenant('webhooks-api');
  const key = await anotherKey(system, owner, 'webhooks', ['webhooks:write']);
  const api = (method: string, path: string, body?: unknown) =>
    system.request(path, {
      method,
      headers: {
        authorization: `Api-Key ${key.apiKey}`,
        'x-organization-id': String(key.organizationId),
        ...(body === undefined ? {} : { 'content-type': 'application/json' }),
      },
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    });
  const receiver = await startWebhookReceiver([]);
  receivers.push(receiver);
  const created = await api('POST', '/api/v1/webhooks/', { url: receiver.url, event_types: ['message.sent'] });
  assert.equal(created.status, 201, created.text);
  const id = created.body.id as number;
  const first = String(created.body.secret);
  receiver.secrets = [first];

  /** Sends a test event through the API and waits for the receiver to acknowledge it. */
  const testEvent = async () => {
    const queued = await api('POST', `/api/v1/webhooks/${id}/test`);
    assert.equal(queued.status, 202, queued.text);
    return waitFor(() => receiver.received.find((webhook) => webhook.id === queued.body.event_id), { timeoutMs: 15_000, what: 'the test event received' });
  };
  const tested = await testEvent();
  assert.deepEqual(receiver.unverified, []);
  assert.deepEqual(tested.verifiedWith, [first]);
  assert.deepEqual(tested.body, { type: 'webhook.test', timestamp: tested.body.timestamp, data: { endpoint_id: id } });
  const shown = await waitFor(
    async () => {
      const read = await api('GET', `/api/v1/webhooks/${id}/`);
      return (read.body.last_delivery as { succeeded?: boolean } | null)?.succeeded ? read.body : undefined;
    },
    { timeoutMs: 5_000, what: 'the attempt recorded' },
  );
  assert.deepEqual([(shown.last_delivery as { status_code: number }).status_code, shown.last_error], [204, null]);
  const logged = (await api('GET', `/api/v1/webhooks/${id}/attempts/`)).body.results as Array<Record<string, unknown>>;
  assert.deepEqual(
    logged.map((attempt) => [attempt.event_id, attempt.event_type, attempt.status_code]),
    [[tested.id, 'webhook.test', 204]],
  );

  const rotated = await api('POST', `/api/v1/webhooks/${id}/rotate-secret`);
  assert.equal(rotated.status, 200, rotated.text);
  const second = String(rotated.body.secret);
  receiver.secrets = [first, second];
  const overlapping = await testEvent();
  assert.deepEqual(overlapping.verifiedWith, [first, second], 'each secret alone verifies it');
  assert.equal(overlapping.signature.split(' ').length, 2);
  await api('DELETE', `/api/v1/webhooks/${id}/`);
});
