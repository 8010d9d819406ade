// Case 9 of the delivery guarantees (docs/delivery-guarantees.md): SIGTERM to each service while it has work in
// flight. The gateway answers the requests it is serving; auth-svc and dispatch-svc finish the calls they are in;
// a mailer finishes the jobs it holds, or hands them back at its deadline for another replica. No message is lost.
// Work is held in flight on purpose: a stopped dispatch-svc (SIGSTOP), a table lock in PostgreSQL, a slow relay.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import type { PoolClient } from 'pg';
import { audit, waitForStates } from '../harness/delivery-audit.ts';
import { startReliableSystem } from '../harness/reliable-system.ts';
import { exitOf, gatewayReachesServices } from '../harness/service-waits.ts';
import { SmtpScript } from '../harness/smtp-script.ts';
import type { HttpResult, System, Tenant } from '../harness/system.ts';
import { anotherKey } from '../harness/tenants.ts';
import { waitFor } from '../harness/wait.ts';

const script = new SmtpScript();
let system: System;
let tenant: Tenant;

before(async () => {
  system = await startReliableSystem({ mailerReplicas: 2, smtpReply: script.reply, env: { NOTIFY_PUBLIC_SEND_RATE: '100000/min', MAILER_ACK_WAIT: '5s' } });
  tenant = await system.createTenant('shutdown');
  await system.putTemplate(tenant.projectId, 'welcome');
});

after(async () => {
  await system?.stop();
});

let counter = 0;
const body = (prefix = 'user') => ({ template: 'welcome', to: `${prefix}${++counter}@example.com`, channel: 'email', data: { name: 'Ada' } });
const pause = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
const reachable = () => gatewayReachesServices(() => system.send(tenant, { ...body(), template: 'no-such-template' }));

/** Every response 202; returns the message ids, and checks each one ends as exactly one email. */
async function assertAllDelivered(responses: readonly HttpResult[]): Promise<void> {
  for (const response of responses) assert.equal(response.status, 202, response.text);
  const ids = responses.map((response) => response.body.message_id as number);
  await waitForStates(system.db, ids, { timeoutMs: 30_000 });
  const result = await audit(system.db, system.resources.mailDir, ids);
  assert.deepEqual(result.broken, []);
  assert.equal(result.delivered, ids.length);
}

/** Waits until `count` statements of the services wait on a lock this test holds: they are in flight for sure. */
async function waitingOnLock(count: number): Promise<void> {
  await waitFor(
    async () => {
      const { rows } = await system.db.query<{ n: number }>(
        `SELECT count(*)::int AS n FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock'`,
      );
      return (rows[0]?.n ?? 0) >= count ? true : undefined;
    },
    { timeoutMs: 5_000, intervalMs: 25, what: `${count} statements waiting on the lock` },
  );
}

/** Sends the gateway has put in SendMany calls to dispatch-svc so far (its notify_gateway_send_many_items histogram). */
async function sendsHandedToDispatch(): Promise<number> {
  const text = await (await fetch(`http://127.0.0.1:${system.stack.ports.metrics.gateway}/metrics`)).text();
  return Number(/^notify_gateway_send_many_items_sum(?:\{[^}]*\})? (\d+)$/m.exec(text)?.[1] ?? 0);
}

/** Holds a PostgreSQL lock on `table` (every read and write of it waits) until the returned function is called. */
async function lockTable(table: 'outbox' | 'api_keys'): Promise<() => Promise<void>> {
  const client: PoolClient = await system.db.connect();
  await client.query('BEGIN');
  await client.query(`LOCK TABLE ${table} IN ACCESS EXCLUSIVE MODE`);
  return async () => {
    await client.query('COMMIT');
    client.release();
  };
}

describe('SIGTERM under load', () => {
  test('gateway: requests in flight when it is told to stop are answered, then it exits', async () => {
    await reachable();
    // dispatch-svc paused: every send waits in the gateway for its answer.
    system.stack.kill('dispatch-svc', 'SIGSTOP');
    const inFlight = Array.from({ length: 5 }, () => system.send(tenant, body()));
    await pause(500);
    system.stack.kill('gateway', 'SIGTERM');
    await pause(300);
    system.stack.kill('dispatch-svc', 'SIGCONT');
    const responses = await Promise.all(inFlight);
    assert.equal((await exitOf(system.stack, 'gateway')).code, 0);
    await system.stack.restart('gateway');
    await assertAllDelivered(responses);
  });

  test('dispatch-svc: Send calls in their transaction when it is told to stop commit and answer, then it exits', async () => {
    await reachable();
    const handedBefore = await sendsHandedToDispatch();
    const release = await lockTable('outbox');
    let inFlight: Promise<HttpResult>[];
    try {
      inFlight = Array.from({ length: 5 }, () => system.send(tenant, body()));
      // The gateway gathers sends that arrive together into one SendMany call, and dispatch-svc into one transaction:
      // not a backend each. Every send handed over, and a transaction waiting on the lock, they are in flight for sure.
      await waitFor(async () => ((await sendsHandedToDispatch()) - handedBefore >= 5 ? true : undefined), {
        timeoutMs: 5_000,
        intervalMs: 25,
        what: 'the gateway to hand the 5 sends to dispatch-svc',
      });
      await waitingOnLock(1);
      system.stack.kill('dispatch-svc', 'SIGTERM');
      await pause(300);
    } finally {
      await release();
    }
    const responses = await Promise.all(inFlight);
    assert.equal((await exitOf(system.stack, 'dispatch-svc')).code, 0);
    await system.stack.restart('dispatch-svc');
    await reachable();
    await assertAllDelivered(responses);
  });

  test('auth-svc: Authorize calls it is in when it is told to stop are answered, then it exits', async () => {
    // New keys are not cached anywhere: each send makes auth-svc read api_keys, which waits on the lock.
    const keys = await Promise.all(Array.from({ length: 5 }, (_, index) => anotherKey(system, tenant, `shutdown-${index}`)));
    await reachable();
    const release = await lockTable('api_keys');
    let inFlight: Promise<HttpResult>[];
    try {
      inFlight = keys.map((key) => system.send(key, body()));
      await waitingOnLock(5);
      system.stack.kill('auth-svc', 'SIGTERM');
      await pause(300);
    } finally {
      await release();
    }
    const responses = await Promise.all(inFlight);
    assert.equal((await exitOf(system.stack, 'auth-svc')).code, 0);
    await system.stack.restart('auth-svc');
    await reachable();
    await assertAllDelivered(responses);
  });

  test('mailer: jobs it holds when it is told to stop are finished, and it takes no new one', async () => {
    system.stack.kill('mailer-svc', 'SIGTERM', 1);
    await exitOf(system.stack, 'mailer-svc', 1);
    script.hold('slow');
    const held = await Promise.all(Array.from({ length: 4 }, () => system.send(tenant, body('slow'))));
    await waitFor(async () => (script.waiting === 4 ? true : undefined), { timeoutMs: 10_000, what: 'mailer 0 to be at the relay with 4 jobs' });
    system.stack.kill('mailer-svc', 'SIGTERM', 0);
    await pause(300);
    const later = await system.send(tenant, body());
    await pause(500);
    script.release('slow');
    assert.equal((await exitOf(system.stack, 'mailer-svc', 0)).code, 0);
    // The mailer exits once JetStream has its `sent` events; dispatch-svc applies them a moment later. No mailer runs
    // now, so every `sent` with one attempt is the stopping replica's.
    const states = async (): Promise<unknown[][]> =>
      (
        await system.db.query<{ state: string; attempts: number }>('SELECT state, attempts FROM messages WHERE id = ANY($1::bigint[])', [
          held.map((response) => response.body.message_id as number),
        ])
      ).rows.map((row) => [row.state, row.attempts]);
    const finished = await waitFor(async () => ((await states()).every(([state]) => state === 'sent') ? states() : undefined), {
      timeoutMs: 5_000,
      what: 'the held jobs recorded sent',
    }).catch(() => states());
    assert.deepEqual(finished, Array(4).fill(['sent', 1]), 'finished by the stopping replica');
    const { rows: queued } = await system.db.query<{ state: string }>('SELECT state FROM messages WHERE id = $1', [later.body.message_id]);
    assert.equal(queued[0]?.state, 'queued', 'a stopping replica takes no new job');
    await system.stack.restart('mailer-svc', 1);
    await assertAllDelivered([...held, later]);
  });

  test('mailer: jobs it cannot finish before its deadline are handed back, and another replica delivers each once', async () => {
    await system.stack.restart('mailer-svc', 0, { SHUTDOWN_TIMEOUT_MS: '2000' });
    system.stack.kill('mailer-svc', 'SIGTERM', 1);
    await exitOf(system.stack, 'mailer-svc', 1);
    script.hold('stuck');
    const held = await Promise.all(Array.from({ length: 3 }, () => system.send(tenant, body('stuck'))));
    await waitFor(async () => (script.waiting === 3 ? true : undefined), { timeoutMs: 10_000, what: 'mailer 0 to be at the relay with 3 jobs' });
    system.stack.kill('mailer-svc', 'SIGTERM', 0);
    assert.equal((await exitOf(system.stack, 'mailer-svc', 0)).code, 0);
    assert.match(system.stack.logs.text('mailer-svc-0'), /"returned":3,"msg":"shutdown deadline reached; unfinished jobs returned to the queue"/);
    script.release('stuck');
    await system.stack.restart('mailer-svc', 1);
    await assertAllDelivered(held);
  });
});
