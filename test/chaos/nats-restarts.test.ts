// The NATS restart drill (issue 52): the one nats-server is stopped and started again many times while clients keep
// sending, alternately killed (SIGKILL, a crash) and stopped (SIGTERM), each time at another moment of the traffic.
// After each restart every kind of NATS consumer must receive again within 10 s of the server answering:
//   - the jobs consumer (the mailers) and the delivery events consumer (dispatch-svc): a message sent after the
//     restart reaches `sent`;
//   - the webhooks consumer (webhook-svc): that message's `message.sent` reaches the integrator's endpoint;
//   - the key invalidations (a core subscription in the gateway): a key the gateway holds in its cache (for 5 minutes
//     here, so only the invalidation can end it) is refused once revoked;
//   - the throttle's key-value watch (the mailers): a pace written to the bucket shows in both mailers' metrics.
// And nothing accepted is lost: once the clients stop, every 202 is sent with its email, or failed. Last, NATS comes
// back without its store (a new volume): the services declare their streams, consumers and buckets again, and every
// consumer receives again within the same 10 s.
// `npm run test:chaos` restarts NATS 10 times; `npm test` (CHAOS_DURATION=30s) 3 times. With CHAOS_NATS=cluster the
// drill is skipped: the cluster soak stops nodes of a three-node cluster instead.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { jetstream } from '@nats-io/jetstream';
import { connect, type NatsConnection } from '@nats-io/transport-node';
import { parseDuration } from '@notify/platform';
import { topology } from '@notify/proto';
import { audit, waitForStates } from '../harness/delivery-audit.ts';
import { type PrivateNats, startPrivateNats } from '../harness/private-nats.ts';
import { startReliableSystem, underFaults } from '../harness/reliable-system.ts';
import { metricValue } from '../harness/service-metrics.ts';
import { sendSteadily, type Tally } from '../harness/steady-senders.ts';
import type { System, Tenant } from '../harness/system.ts';
import { waitFor } from '../harness/wait.ts';
import { startWebhookReceiver, type WebhookReceiver } from '../harness/webhook-receiver.ts';

const clustered = (process.env.CHAOS_NATS ?? 'single') === 'cluster';
const restarts = parseDuration(process.env.CHAOS_DURATION ?? '2m') <= 30_000 ? 3 : 10;
/** How soon after NATS answers again each consumer must have received. */
const resumeWithinMs = 10_000;

let nats: PrivateNats;
let system: System;
let tenant: Tenant;
let receiver: WebhookReceiver;
/** The test's own connection, which writes paces to the mailers' throttle bucket as a mailer would. */
let writer: NatsConnection;

const pause = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

before(async () => {
  if (clustered) return;
  nats = await startPrivateNats();
  system = await startReliableSystem({
    nats,
    mailerReplicas: 2,
    env: {
      NOTIFY_PUBLIC_SEND_RATE: '1000000/min',
      NOTIFY_PUBLIC_READ_RATE: '1000000/min',
      NOTIFY_WEBHOOK_ALLOW_PRIVATE: 'true',
      ...underFaults,
    },
    serviceEnv: {
      // A key stays cached far longer than the drill: only its invalidation over NATS can end it.
      gateway: { AUTH_CACHE_TTL: '5m' },
      'webhook-svc': { WEBHOOK_RETRY_SCHEDULE: '1s,1s,1s,2s,2s,2s,2s', WEBHOOK_TIMEOUT: '3s', WEBHOOK_ACK_WAIT: '5s' },
    },
  });
  tenant = await system.createTenant('nats-restarts');
  await system.putTemplate(tenant.projectId, 'welcome');
  receiver = await startWebhookReceiver([]);
  const created = JSON.parse(
    await system.notifyctlOk('webhook', 'create', '--project', String(tenant.projectId), '--url', receiver.url, '--events', 'message.sent', '--json'),
  ) as { secret: string };
  receiver.secrets = [created.secret];
  writer = await connect({ servers: nats.url, maxReconnectAttempts: -1, reconnectTimeWait: 200 });
});

after(async () => {
  if (clustered) return;
  if (nats && !nats.running) await nats.start();
  await writer?.close();
  await receiver?.stop();
  await system?.stop();
  await nats?.stop();
});

/** Resolves once `check` holds, or fails naming the consumer that did not resume within resumeWithinMs of `since`. */
async function resumed(what: string, since: number, check: () => Promise<boolean>): Promise<number> {
  await waitFor(async () => ((await check()) ? true : undefined), {
    timeoutMs: Math.max(0, since + resumeWithinMs - Date.now()),
    intervalMs: 100,
    what: `${what} within ${resumeWithinMs / 1_000} s of NATS answering`,
  });
  return Date.now() - since;
}

/** Sends one message, retrying 503s, and returns its id. */
async function sendOne(to: string): Promise<number> {
  for (;;) {
    const response = await system.send(tenant, { template: 'welcome', to, channel: 'email', data: { name: 'Drill' } }).catch(() => undefined);
    if (response?.status === 202) return response.body.message_id as number;
    await pause(100);
  }
}

/** Jobs, delivery events and webhooks: a message sent now is sent, and its webhook arrives. */
async function probeDelivery(round: number, since: number): Promise<{ sent: number; webhook: number; id: number }> {
  const id = await sendOne(`probe-${round}@example.com`);
  const sent = await resumed('the probe message sent (jobs and delivery events)', since, async () => {
    const { rows } = await system.db.query<{ state: string }>('SELECT state FROM messages WHERE id = $1', [id]);
    return rows[0]?.state === 'sent';
  });
  const webhook = await resumed('its message.sent webhook received', since, async () =>
    receiver.received.some((event) => event.body.type === 'message.sent' && event.body.data.message_id === id),
  );
  return { sent, webhook, id };
}

/** Key invalidations: a key the gateway caches after the restart is refused once revoked. */
async function probeRevocation(since: number): Promise<number> {
  const created = await system.authAdmin.call('CreateApiKey', { projectId: tenant.projectId, name: 'drill' });
  const read = () =>
    system.request('/api/v1/messages/?limit=1', {
      headers: { authorization: `Api-Key ${created.apiKey}`, 'x-organization-id': String(tenant.organizationId) },
    });
  // Accepted (the project's messages listed), so cached.
  let last = 0;
  await waitFor(
    async () => {
      last = (await read()).status;
      return last === 200 ? true : undefined;
    },
    { timeoutMs: resumeWithinMs, what: 'the new key accepted' },
  ).catch((error: unknown) => assert.fail(`${(error as Error).message}: the last read answered ${last}`));
  await system.authAdmin.call('RevokeApiKey', { id: created.key?.id ?? 0 });
  return resumed('the revoked key refused (key invalidations)', since, async () => (await read()).status === 401);
}

/** The throttle's key-value watch: a pace written to the bucket reaches both mailers. */
async function probeThrottleWatch(round: number, since: number): Promise<number> {
  const domain = `drill-${round}.example`;
  const bucket = topology(system.resources.natsPrefix).throttleBucket;
  const pace = JSON.stringify({ domain, concurrency: 1, perSecond: 1, changedAt: Date.now() });
  await waitFor(
    async () =>
      (await jetstream(writer)
        .publish(`$KV.${bucket}.d.${domain}`, pace)
        .then(() => true)
        .catch(() => undefined)) as true | undefined,
    { timeoutMs: resumeWithinMs, intervalMs: 200, what: 'the pace written' },
  );
  return resumed('the pace seen by both mailers (the throttle watch)', since, async () => {
    const paces = await Promise.all(
      system.stack.ports.metrics.mailer.map((port) => metricValue(port, 'notify_destination_concurrency_limit', { domain }).catch(() => undefined)),
    );
    return paces.every((value) => value === 1);
  });
}

test(`NATS stopped and started ${restarts} times while sending: every consumer receives again within 10 s, nothing is lost`, {
  skip: clustered && 'the drill restarts one nats-server; the cluster soak (CHAOS_NATS=cluster) stops nodes of a cluster instead',
}, async () => {
  const tally: Tally = { accepted: [], abandoned: 0, retried: 0 };
  const stop = new AbortController();
  const clients = sendSteadily(system, tenant, { count: 2, stop: stop.signal, tally });
  const rounds: string[] = [];
  const probes: number[] = [];
  try {
    for (let round = 0; round < restarts; round += 1) {
      // At another moment of the traffic each time: a publish, an ack, a watch update in flight.
      await pause(300 + Math.floor(Math.random() * 1_200));
      const signal = round % 2 === 0 ? 'SIGKILL' : 'SIGTERM';
      await nats.kill(signal);
      await pause(1_000);
      await nats.start();
      const since = Date.now();
      const [delivery, revocation, watch] = await Promise.all([probeDelivery(round, since), probeRevocation(since), probeThrottleWatch(round, since)]);
      probes.push(delivery.id);
      rounds.push(`${signal}: sent ${delivery.sent} ms, webhook ${delivery.webhook} ms, revocation ${revocation} ms, throttle watch ${watch} ms`);
    }
  } finally {
    stop.abort();
    await clients;
  }
  const ids = [...tally.accepted, ...probes];
  await waitForStates(system.db, ids, { timeoutMs: 60_000, what: 'every accepted message sent or failed' });
  const result = await audit(system.db, system.resources.mailDir, ids);
  // A failure with its email, or a second email, is the soak's to judge: lost is a 202 with no email and no failure.
  const lost = result.broken.filter((entry) => !['sent', 'failed'].includes(entry.state) || (entry.state === 'sent' && entry.emails === 0));
  assert.deepEqual(lost, [], `lost: ${JSON.stringify(lost.slice(0, 10))}`);
  assert.ok(tally.accepted.length > restarts * 5, `${tally.accepted.length} sends accepted`);
  console.log(
    `# ${restarts} restarts, ${ids.length} messages accepted (${tally.retried} retried sends), ${result.duplicates} duplicate emails\n# ${rounds.join('\n# ')}`,
  );
});

test('NATS back without its store: the services declare their streams, consumers and buckets again, and every consumer receives', {
  skip: clustered && 'the drill restarts one nats-server; the cluster soak (CHAOS_NATS=cluster) stops nodes of a cluster instead',
}, async () => {
  await nats.kill('SIGTERM');
  nats.emptyStore();
  await nats.start();
  const since = Date.now();
  const [delivery, revocation, watch] = await Promise.all([probeDelivery(restarts, since), probeRevocation(since), probeThrottleWatch(restarts, since)]);
  console.log(`# an empty store: sent ${delivery.sent} ms, webhook ${delivery.webhook} ms, revocation ${revocation} ms, throttle watch ${watch} ms`);
});
