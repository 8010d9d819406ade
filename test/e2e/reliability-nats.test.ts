// Case 1 of the delivery guarantees (docs/delivery-guarantees.md): NATS down. The system runs on a private nats-server
// that this file kills; sends are still accepted from the outbox, quickly, and once NATS is back on the same port and
// store every one is delivered exactly once.
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { after, before, test } from 'node:test';
import { audit, mailCounts, waitForStates } from '../harness/delivery-audit.ts';
import { type PrivateNats, startPrivateNats } from '../harness/private-nats.ts';
import { startReliableSystem } from '../harness/reliable-system.ts';
import type { System, Tenant } from '../harness/system.ts';

let nats: PrivateNats;
let system: System;
let tenant: Tenant;

before(async () => {
  nats = await startPrivateNats();
  system = await startReliableSystem({
    nats,
    env: { NOTIFY_PUBLIC_SEND_RATE: '100000/min', OUTBOX_RELAY_INTERVAL: '200ms', OUTBOX_RELAY_MIN_AGE: '1s' },
  });
  tenant = await system.createTenant('nats-outage');
  await system.putTemplate(tenant.projectId, 'welcome');
});

after(async () => {
  if (nats && !nats.running) await nats.start();
  await system?.stop();
  await nats?.stop();
});

const body = (n: number) => ({ template: 'welcome', to: `user${n}@example.com`, channel: 'email', data: { name: `User ${n}` } });

async function jobsStored(): Promise<number> {
  const { connect } = await import('@nats-io/transport-node');
  const { jetstreamManager } = await import('@nats-io/jetstream');
  const connection = await connect({ servers: nats.url });
  try {
    const jsm = await jetstreamManager(connection);
    return (await jsm.streams.info(`${system.resources.natsPrefix.toUpperCase()}NOTIFY_JOBS`)).state.last_seq;
  } finally {
    await connection.close();
  }
}

test('with NATS down, 120 sends are accepted at once from the outbox, and each is delivered exactly once when NATS returns', async () => {
  const warmup = await system.send(tenant, body(0));
  assert.equal(warmup.status, 202, warmup.text);
  await waitForStates(system.db, [warmup.body.message_id as number], { timeoutMs: 15_000 });
  const jobsBefore = await jobsStored();
  const pids = (['auth-svc', 'dispatch-svc', 'mailer-svc', 'gateway'] as const).map((service) => system.stack.pid(service));

  await nats.kill('SIGKILL');
  const total = 120;
  const ids: number[] = [];
  const latencies: number[] = [];
  let next = 1;
  await Promise.all(
    Array.from({ length: 8 }, async () => {
      while (next <= total) {
        const n = next++;
        const started = performance.now();
        const response = await system.send(tenant, body(n), { 'idempotency-key': randomUUID() });
        latencies.push(performance.now() - started);
        assert.equal(response.status, 202, response.text);
        ids.push(response.body.message_id as number);
      }
    }),
  );
  const slowest = Math.max(...latencies);
  console.log(`sends while NATS was down: ${total} accepted, slowest ${Math.round(slowest)} ms`);
  // dispatch-svc knows the connection is down and leaves the job to the relay instead of waiting out a PubAck.
  assert.ok(slowest < 1_500, `every send answered well within the gateway's 2 s deadline (slowest ${Math.round(slowest)} ms)`);
  const { rows } = await system.db.query<{ n: number }>('SELECT count(*)::int AS n FROM outbox WHERE message_id = ANY($1::bigint[])', [ids]);
  assert.equal(rows[0]?.n, total, 'every job waits in the outbox');
  assert.equal(mailCounts(system.resources.mailDir).size, 1, 'nothing is delivered while NATS is down');

  // Long enough for the relay to try and fail a few times.
  await new Promise((resolve) => setTimeout(resolve, 1_500));
  await nats.start();
  const back = performance.now();

  await waitForStates(system.db, ids, { timeoutMs: 60_000 });
  console.log(`drained ${Math.round(performance.now() - back)} ms after NATS returned`);
  await new Promise((resolve) => setTimeout(resolve, 1_000));
  const result = await audit(system.db, system.resources.mailDir, ids);
  console.log(`after NATS returned: ${JSON.stringify({ ...result, broken: result.broken.length })}`);
  assert.deepEqual(result.broken, []);
  assert.equal(result.delivered, total);
  assert.equal(result.duplicates, 0);
  assert.equal(await jobsStored(), jobsBefore + total, 'one job per message: the relay and any late direct publish were de-duplicated');
  const outbox = await system.db.query('SELECT 1 FROM outbox');
  assert.equal(outbox.rowCount, 0);
  assert.deepEqual(
    (['auth-svc', 'dispatch-svc', 'mailer-svc', 'gateway'] as const).map((service) => system.stack.pid(service)),
    pids,
    'no service was restarted',
  );
});
