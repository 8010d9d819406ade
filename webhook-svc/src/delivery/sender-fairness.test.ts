// No tenant stalls another's webhooks: the sender against a real PostgreSQL, JetStream and HTTP receivers, with small
// settings so a test takes seconds. One project's endpoints, more than enough of them to hold every request a replica
// may have open, all point at a receiver that accepts and never answers; another organization's webhooks must keep
// their usual latency while the first keeps sending. An endpoint that times out in a row is slowed down to one request.
// And an endpoint's limit holds across replicas: five of them share its four requests.
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { after, before, test } from 'node:test';
import { createRegistry } from '@notify/platform';
import { createPool, type Pool } from '@notify/platform/database';
import { createDataKey } from '@notify/platform/mail';
import { connectNats, type JetStreamClient, jetstream, jetstreamManager, type NatsConnection, ReplicaPresence, schemaHeaders } from '@notify/platform/nats';
import { encodeWebhookDelivery, topology } from '@notify/proto';
import { createTestDatabase, type TestDatabase } from '@notify/test/harness/database.ts';
import { testEnvironment } from '@notify/test/harness/environment.ts';
import { silentLogger } from '@notify/test/harness/logger.ts';
import { waitFor } from '@notify/test/harness/wait.ts';
import { startWebhookReceiver, type WebhookReceiver } from '@notify/test/harness/webhook-receiver.ts';
import { createWebhookMetrics, type WebhookMetrics } from './metrics.ts';
import { declareSenderJetStream, Sender, type SenderSettings } from './sender.ts';

/** A replica of 8 requests, each given 2 s; a timed-out attempt is made again a second later, so a stalled project keeps sending. */
const replica = {
  concurrency: 8,
  outbound: { allowPrivate: true, timeoutMs: 2_000, maxBodyBytes: 1_024 },
  schedule: [1_000, 1_000, 1_000, 1_000, 1_000, 1_000, 1_000],
  disableAfterMs: 86_400_000,
  leaseMs: 6_000,
};

const logger = silentLogger('webhook-fairness-test');
let database: TestDatabase;
let pool: Pool;
let nc: NatsConnection;
let js: JetStreamClient;
const senders: Sender[] = [];
const presences: ReplicaPresence[] = [];
const streams: string[] = [];
const receivers: WebhookReceiver[] = [];

const newSecret = (): string => `whsec_${randomBytes(24).toString('base64')}`;
const id = async (sql: string, values: unknown[]): Promise<number> => Number((await pool.query<{ id: string }>(`${sql} RETURNING id`, values)).rows[0]?.id);
const pause = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** An organization with one project, an API key and a template: what a message of its own needs. */
async function tenant(name: string) {
  const planId = await id('INSERT INTO plans (name) VALUES ($1)', [name]);
  const organizationId = await id('INSERT INTO organizations (name, plan_id) VALUES ($1, $2)', [name, planId]);
  const projectId = await id('INSERT INTO projects (organization_id, name) VALUES ($1, $2)', [organizationId, name]);
  const apiKeyId = await id('INSERT INTO api_keys (project_id, name, prefix, secret_hash) VALUES ($1, $2, $3, $4)', [
    projectId,
    'key',
    `ntfy_${name}`,
    randomBytes(32),
  ]);
  const templateId = await id("INSERT INTO templates (project_id, slug, active, subject, html, text) VALUES ($1, 'welcome', true, 's', 'h', 't')", [projectId]);
  return { organizationId, projectId, apiKeyId, templateId };
}
type Tenant = Awaited<ReturnType<typeof tenant>>;

async function receiver(): Promise<WebhookReceiver> {
  const started = await startWebhookReceiver([newSecret()]);
  receivers.push(started);
  return started;
}

const endpoint = (owner: Tenant, to: WebhookReceiver): Promise<number> =>
  id(`INSERT INTO webhook_endpoints (project_id, organization_id, url, event_types, secret) VALUES ($1, $2, $3, '{message.sent}', $4)`, [
    owner.projectId,
    owner.organizationId,
    to.url,
    to.secrets[0],
  ]);

/** Senders on a stream of their own, as `replicas` replicas run them, once each counts the others. */
async function startRun(settings: SenderSettings, replicas = 1) {
  const names = topology(`t${randomBytes(4).toString('hex')}_`);
  const jsm = await jetstreamManager(nc);
  const bucket = await declareSenderJetStream(js, jsm, names, { ackWaitMs: settings.leaseMs, replicas: 1 });
  streams.push(names.webhooksStream, `KV_${names.webhookReplicasBucket}`);
  const metrics = createWebhookMetrics(createRegistry('webhook-svc'));
  const started = await Promise.all(Array.from({ length: replicas }, () => ReplicaPresence.open(bucket, { logger })));
  presences.push(...started);
  await waitFor(() => started.every((presence) => presence.replicas.count === replicas), { timeoutMs: 5_000, what: `${replicas} replicas counted` });
  for (const presence of started) {
    // The secrets are stored in clear, as before sealing: they sign as they are.
    const deps = { js, names, pool, metrics, logger, dataKey: createDataKey(randomBytes(32)), replicas: () => presence.replicas };
    senders.push(Sender.start(deps, settings));
  }
  /** A message.sent event of a new message of `owner` for `endpointId`, as dispatch-svc's relay hands it over: rows, then a message on the stream. */
  async function publishEvent(owner: Tenant, endpointId: number): Promise<string> {
    const messageId = await id(
      `INSERT INTO messages (project_id, organization_id, api_key_id, template_id, template_slug, template_version, recipient, data, state, celery_task_id)
       VALUES ($1, $2, $3, $4, 'welcome', 1, 'to@example.com', '{}', 'sent', gen_random_uuid())`,
      [owner.projectId, owner.organizationId, owner.apiKeyId, owner.templateId],
    );
    const eventId = await id(
      `INSERT INTO webhook_events (project_id, message_id, type, sequence, payload, published_at) VALUES ($1, $2, 'message.sent', 1, $3, now())`,
      [owner.projectId, messageId, { type: 'message.sent', data: { message_id: messageId } }],
    );
    await pool.query('INSERT INTO webhook_deliveries (event_id, endpoint_id, next_attempt_at) VALUES ($1, $2, now())', [eventId, endpointId]);
    const message = encodeWebhookDelivery({ eventId, endpointId });
    await js.publish(names.webhooksSubject(endpointId), message.bytes, { headers: schemaHeaders(message) });
    return `evt_${eventId}`;
  }
  return { metrics, publishEvent };
}

/** How long after its publish each event reached `to`, in ms. */
async function latencies(to: WebhookReceiver, published: ReadonlyMap<string, number>): Promise<number[]> {
  const arrivals = await waitFor(
    () => {
      const found = [...published.keys()].map((webhookId) => to.received.find((webhook) => webhook.id === webhookId)?.at);
      return found.every((at) => at !== undefined) ? (found as number[]) : undefined;
    },
    { timeoutMs: 20_000, what: `webhooks ${[...published.keys()].join(', ')}` },
  );
  return arrivals.map((at, index) => at - [...published.values()][index]!);
}

const counted = async (counter: WebhookMetrics['projectBusy']): Promise<number> => (await counter.get()).values[0]?.value ?? 0;

before(async () => {
  database = await createTestDatabase();
  pool = createPool(database.url, { max: 8, applicationName: 'webhook-fairness-test', logger });
  nc = await connectNats(testEnvironment.natsUrl, 'webhook-fairness-test', logger);
  js = jetstream(nc);
});

after(async () => {
  // The receivers first: the requests still open then fail at once instead of waiting out their timeout.
  for (const started of receivers) await started.stop();
  for (const sender of senders) await sender.stop();
  for (const presence of presences) await presence.close();
  const jsm = await jetstreamManager(nc);
  for (const stream of streams) await jsm.streams.delete(stream).catch(() => false);
  await nc?.close();
  await pool?.end();
  await database?.drop();
});

test("a project whose endpoints all hang holds at most its share: another organization's webhooks keep their usual latency", async (t) => {
  // 2 requests per endpoint and 4 per project: the 8 hanging endpoints alone could hold 16, twice the replica's 8.
  const settings: SenderSettings = { ...replica, endpointConcurrency: 2, projectConcurrency: 4 };
  const { metrics, publishEvent } = await startRun(settings);
  const stalled = await tenant('stalled');
  const other = await tenant('other');
  const hanging = await receiver();
  hanging.answer = () => 'hang';
  const fast = await receiver();
  const hangingIds = await Promise.all(Array.from({ length: 8 }, () => endpoint(stalled, hanging)));
  const fastId = await endpoint(other, fast);

  // The usual latency: the other organization's webhook while nothing else is sent.
  const [usual] = await latencies(fast, new Map([[await publishEvent(other, fastId), Date.now()]]));

  // Ten events for each hanging endpoint; then, while those hang and are tried again, the other organization's.
  await Promise.all(hangingIds.flatMap((endpointId) => Array.from({ length: 10 }, () => publishEvent(stalled, endpointId))));
  await waitFor(() => hanging.open() >= settings.projectConcurrency, { timeoutMs: 5_000, what: 'the hanging receiver to hold requests' });
  const published = new Map<string, number>();
  for (let event = 0; event < 6; event += 1) {
    published.set(await publishEvent(other, fastId), Date.now());
    await pause(400);
  }
  const underLoad = await latencies(fast, published);
  t.diagnostic(
    `usual latency ${usual} ms; while the other project hangs: ${underLoad.join(', ')} ms; hanging receiver's most open requests: ${hanging.maxOpen()}`,
  );
  assert.ok(Math.max(...underLoad) < 1_000, `latencies while the other project hangs: ${underLoad.join(', ')} ms (usual: ${usual} ms)`);
  // The stalled project was sent requests all along, never more at once than its share of the replica; the rest of
  // its deliveries were put back to come again.
  assert.ok(
    hanging.maxOpen() > 0 && hanging.maxOpen() <= settings.projectConcurrency,
    `most requests open at once at the hanging receiver: ${hanging.maxOpen()}`,
  );
  assert.ok((await counted(metrics.projectBusy)) > 0);
});

test('an endpoint whose requests time out three times in a row holds one request at a time, and its share again once it answers', async () => {
  const settings: SenderSettings = {
    ...replica,
    endpointConcurrency: 4,
    projectConcurrency: 6,
    outbound: { ...replica.outbound, timeoutMs: 500 },
    schedule: Array(7).fill(300),
    leaseMs: 3_000,
  };
  const { metrics, publishEvent } = await startRun(settings);
  const owner = await tenant('slowed');
  const dead = await receiver();
  dead.answer = () => 'hang';
  const endpointId = await endpoint(owner, dead);
  await Promise.all(Array.from({ length: 30 }, () => publishEvent(owner, endpointId)));

  // Its whole share at first, until the first requests time out.
  await waitFor(() => dead.maxOpen() === settings.endpointConcurrency, { timeoutMs: 5_000, what: 'the endpoint to hold its share' });
  await waitFor(async () => (await counted(metrics.endpointsSlowed)) === 1, { timeoutMs: 5_000, what: 'the endpoint slowed down' });
  // The slots that took their next delivery before the third timeout came keep it until it times out too.
  await pause(settings.outbound.timeoutMs + 200);
  let mostOpen = 0;
  for (const until = Date.now() + 1_000; Date.now() < until; await pause(20)) mostOpen = Math.max(mostOpen, dead.open());
  assert.equal(mostOpen, 1, 'requests open at once once it was slowed down');

  dead.answer = () => ({ status: 204, delayMs: 200 });
  await waitFor(() => dead.open() > 1, { timeoutMs: 5_000, what: 'more than one request open once it answers' });
});

test("an endpoint's limit holds across replicas: five share its four requests, and every delivery arrives", async (t) => {
  const settings: SenderSettings = { ...replica, endpointConcurrency: 4, projectConcurrency: 6 };
  const { metrics, publishEvent } = await startRun(settings, 5);
  const owner = await tenant('replicated');
  const slow = await receiver();
  slow.answer = () => ({ status: 204, delayMs: 300 });
  const endpointId = await endpoint(owner, slow);
  const published = new Map<string, number>();
  for (const webhookId of await Promise.all(Array.from({ length: 40 }, () => publishEvent(owner, endpointId)))) published.set(webhookId, Date.now());
  await latencies(slow, published);
  const handedBack = (await metrics.endpointBusy.get()).values.find((value) => value.labels.action === 'put_back')?.value ?? 0;
  t.diagnostic(`most requests open at once at the endpoint: ${slow.maxOpen()}; deliveries handed back: ${handedBack}`);
  // Each replica alone may hold 4: together, unshared, they would hold up to 20.
  assert.ok(slow.maxOpen() > 1 && slow.maxOpen() <= settings.endpointConcurrency, `most requests open at once: ${slow.maxOpen()}`);
  // The replica without a part of this endpoint handed its deliveries back rather than send them.
  assert.ok(handedBack > 0, `${handedBack} deliveries handed back`);
});
