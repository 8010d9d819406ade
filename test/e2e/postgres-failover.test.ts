// PostgreSQL that fails over (docs/operations.md, "The stores in production"): the system reaches its database through
// a TCP forwarder standing in for CloudNativePG's `-rw` Service, in front of a primary with a synchronous streaming
// standby (test/harness/private-postgres-failover.ts). Under a steady load of sends, each with its own
// Idempotency-Key, the primary crashes, the standby is promoted and the forwarder moves to it, closing the open
// connections. Every send answers 202 or 503 with Retry-After within the gRPC deadline; every 202 is on the promoted
// server and delivered once; a 503 retried with its key gives exactly one message; no service is restarted.
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { after, before, test } from 'node:test';
import { assertAccepted, assertCoded } from '../harness/contract-shapes.ts';
import { audit, waitForStates } from '../harness/delivery-audit.ts';
import { type PrivatePostgresFailover, startPrivatePostgresFailover } from '../harness/private-postgres-failover.ts';
import { startReliableSystem } from '../harness/reliable-system.ts';
import type { HttpResult, System, Tenant } from '../harness/system.ts';
import { waitFor } from '../harness/wait.ts';

const services = ['auth-svc', 'dispatch-svc', 'mailer-svc', 'gateway'] as const;
/** The gateway's GRPC_DEADLINE (its default): no send may wait much longer for its answer. */
const grpcDeadlineMs = 2_000;
let postgres: PrivatePostgresFailover;
let system: System;
let tenant: Tenant;

before(async () => {
  postgres = await startPrivatePostgresFailover();
  system = await startReliableSystem({ postgres, env: { NOTIFY_PUBLIC_SEND_RATE: '100000/min', GRPC_DEADLINE: `${grpcDeadlineMs}ms` } });
  tenant = await system.createTenant('failover');
  await system.putTemplate(tenant.projectId, 'welcome');
});

after(async () => {
  await system?.stop();
  await postgres?.destroy();
});

interface Attempt {
  readonly key: string;
  readonly to: string;
  readonly response: HttpResult;
  readonly ms: number;
}

let counter = 0;
const bodyFor = (to: string) => ({ template: 'welcome', to, channel: 'email', data: { name: 'Ada' } });

async function attempt(key: string, to: string): Promise<Attempt> {
  const started = performance.now();
  const response = await system.send(tenant, bodyFor(to), { 'Idempotency-Key': key });
  return { key, to, response, ms: performance.now() - started };
}

/** Three senders, each a new key and recipient per send, until stopped; every attempt is kept. */
function steadyLoad(): { attempts: Attempt[]; stop: () => Promise<void> } {
  const attempts: Attempt[] = [];
  let running = true;
  const worker = async (): Promise<void> => {
    while (running) attempts.push(await attempt(randomUUID(), `user${++counter}@example.com`));
  };
  const workers = [worker(), worker(), worker()];
  return {
    attempts,
    async stop() {
      running = false;
      await Promise.all(workers);
    },
  };
}

/** Retries a refused send with its own key and body while it is refused for now (503, or 409 while in flight). */
async function retried(refused: Attempt): Promise<HttpResult> {
  return waitFor(
    async () => {
      const { response } = await attempt(refused.key, refused.to);
      // Any other answer ends the wait, and the caller's assertAccepted reports it.
      return response.status === 503 || response.status === 409 ? undefined : response;
    },
    { timeoutMs: 15_000, intervalMs: 200, what: `the send to ${refused.to} to be accepted on retry` },
  );
}

test('the primary crashes mid-load and the standby is promoted behind the moved address: 202 or 503 with Retry-After, nothing lost or duplicated, no service restarted', {
  timeout: 60_000,
}, async () => {
  const pids = services.map((service) => system.stack.pid(service));
  const load = steadyLoad();
  let switchedAt = 0;
  try {
    await waitFor(() => load.attempts.filter((a) => a.response.status === 202).length >= 15, {
      timeoutMs: 15_000,
      what: 'the load to be under way before the crash',
    });
    await postgres.crashPrimary();
    await postgres.promoteStandby();
    postgres.forwarder.switchTo(postgres.standby.port);
    switchedAt = load.attempts.length;
    await waitFor(() => load.attempts.slice(switchedAt).filter((a) => a.response.status === 202).length >= 15, {
      timeoutMs: 20_000,
      what: 'sends to be accepted again after the switch',
    });
  } finally {
    await load.stop();
  }

  const refused = load.attempts.filter((a) => a.response.status !== 202);
  for (const { response, ms } of load.attempts) {
    assert.ok(ms < grpcDeadlineMs + 1_000, `answered in ${Math.round(ms)} ms, past the gRPC deadline: ${response.status}`);
    if (response.status === 202) {
      assertAccepted(response);
      continue;
    }
    assertCoded(response, 503, 'service_unavailable');
    assert.ok(Number(response.headers.get('retry-after')) >= 1, `Retry-After in whole seconds: ${response.text}`);
  }
  assert.ok(refused.length > 0, 'the failover was felt: some send was refused while there was no primary');
  console.log(`${load.attempts.length} sends: ${load.attempts.length - refused.length} accepted, ${refused.length} answered 503 during the failover`);

  // Each refused send, retried with its key after the failover: accepted once (a replay if its first try had committed).
  const accepted = load.attempts.filter((a) => a.response.status === 202);
  const retries = await Promise.all(refused.map(retried));
  for (const response of retries) assertAccepted(response);
  console.log(
    `${retries.filter((response) => response.body.idempotent_replay === true).length} of the ${retries.length} retries were replays of a send committed before its connection broke`,
  );
  const ids = [...accepted, ...refused.map((a, n) => ({ ...a, response: retries[n] as HttpResult }))].map((a) => a.response.body.message_id as number);
  assert.equal(new Set(ids).size, ids.length, 'one message per key');

  // On the promoted server (system.db goes through the forwarder, now in front of it): every accepted message, and one
  // message per recipient (every send had its own).
  assert.equal(postgres.forwarder.targetPort, postgres.standby.port);
  const recipients = load.attempts.map((a) => a.to);
  await waitForStates(system.db, ids, { timeoutMs: 30_000 });
  const { rows: perRecipient } = await system.db.query<{ recipient: string; count: string }>(
    'SELECT recipient, count(*) FROM messages WHERE recipient = ANY($1::text[]) GROUP BY recipient',
    [recipients],
  );
  assert.deepEqual(
    perRecipient.filter((row) => Number(row.count) !== 1),
    [],
    'no recipient has two messages',
  );
  assert.equal(perRecipient.length, recipients.length, 'every send is a message on the promoted server');
  const result = await audit(system.db, system.resources.mailDir, ids);
  assert.deepEqual(result.broken, []);
  assert.equal(result.delivered, ids.length);
  assert.deepEqual(
    services.map((service) => system.stack.pid(service)),
    pids,
    'no service was restarted',
  );
});
