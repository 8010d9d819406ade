// Cases 2 and 3 of the delivery guarantees (docs/delivery-guarantees.md): processes killed at the worst moments.
// dispatch-svc dies between the commit of a send and its publish, or between the publish and the outbox row's delete
// (a test-only fault setting, NOTIFY_TEST_FAULT, picks the point); a mailer is SIGKILLed while it holds jobs, or right
// after the relay accepted a message and before the job was acknowledged. Every message ends as exactly one email.
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { after, before, describe, test } from 'node:test';
import { type JetStreamManager, jetstreamManager } from '@nats-io/jetstream';
import { connect } from '@nats-io/transport-node';
import { audit, mailCounts, waitForStates } from '../harness/delivery-audit.ts';
import { startReliableSystem } from '../harness/reliable-system.ts';
import { infrastructure } from '../harness/resources.ts';
import { exitOf, gatewayReachesServices } from '../harness/service-waits.ts';
import { SmtpScript } from '../harness/smtp-script.ts';
import type { System, Tenant } from '../harness/system.ts';
import { waitFor } from '../harness/wait.ts';

const script = new SmtpScript();
let system: System;
let tenant: Tenant;
let nats: Awaited<ReturnType<typeof connect>>;
let jsm: JetStreamManager;

before(async () => {
  system = await startReliableSystem({
    mailerReplicas: 2,
    smtpReply: script.reply,
    env: { NOTIFY_PUBLIC_SEND_RATE: '100000/min', OUTBOX_RELAY_INTERVAL: '200ms', OUTBOX_RELAY_MIN_AGE: '1s', MAILER_ACK_WAIT: '5s' },
  });
  tenant = await system.createTenant('crashes');
  await system.putTemplate(tenant.projectId, 'welcome');
  nats = await connect({ servers: infrastructure.natsUrl });
  jsm = await jetstreamManager(nats);
});

after(async () => {
  await nats?.close();
  await system?.stop();
});

const body = (to: string) => ({ template: 'welcome', to, channel: 'email', data: { name: 'Ada' } });
const reachable = () => gatewayReachesServices(() => system.send(tenant, { ...body('nobody@example.com'), template: 'no-such-template' }));
const jobsStored = async (): Promise<number> => (await jsm.streams.info(`${system.resources.natsPrefix.toUpperCase()}NOTIFY_JOBS`)).state.last_seq;

async function metric(port: number, pattern: RegExp): Promise<number> {
  const text = await (await fetch(`http://127.0.0.1:${port}/metrics`)).text();
  return Number(pattern.exec(text)?.[1] ?? 0);
}

describe('dispatch-svc killed in the middle of a send', () => {
  after(async () => {
    // Only when a test failed half-way: the others leave dispatch-svc running without a fault.
    if (system.stack.serviceEnv('dispatch-svc').NOTIFY_TEST_FAULT === 'none' && system.stack.pid('dispatch-svc')) return;
    await system.stack.restart('dispatch-svc', 0, { NOTIFY_TEST_FAULT: 'none' });
    await reachable();
  });

  for (const fault of ['exit-after-commit', 'exit-after-publish'] as const) {
    test(`killed ${fault === 'exit-after-commit' ? 'after the commit, before the publish' : 'after the publish, before the outbox delete'}: the relay publishes, JetStream keeps one job, one email`, async () => {
      await system.stack.restart('dispatch-svc', 0, { NOTIFY_TEST_FAULT: fault });
      await reachable();
      const jobsBefore = await jobsStored();
      const key = randomUUID();
      const to = `${fault}@example.com`;

      const first = await system.send(tenant, body(to), { 'idempotency-key': key });
      assert.equal(first.status, 503, `the caller sees the crash as a retryable 503: ${first.text}`);
      assert.ok(first.headers.get('retry-after'));
      assert.equal((await exitOf(system.stack, 'dispatch-svc')).signal, 'SIGKILL');
      const { rows } = await system.db.query<{ id: number }>('SELECT m.id FROM messages m JOIN outbox o ON o.message_id = m.id WHERE m.idempotency_key = $1', [
        key,
      ]);
      const id = rows[0]?.id;
      assert.ok(id, 'the message and its outbox row were committed');
      assert.equal(await jobsStored(), fault === 'exit-after-commit' ? jobsBefore : jobsBefore + 1);

      await system.stack.restart('dispatch-svc', 0, { NOTIFY_TEST_FAULT: 'none' });
      await reachable();
      // The caller retries with the same Idempotency-Key and gets the message that was accepted.
      const retry = await system.send(tenant, body(to), { 'idempotency-key': key });
      assert.equal(retry.status, 202, retry.text);
      assert.equal(retry.body.message_id, id);
      assert.equal(retry.body.idempotent_replay, true);

      await waitForStates(system.db, [id], { timeoutMs: 20_000, states: ['sent'] });
      await waitFor(async () => ((await system.db.query('SELECT 1 FROM outbox WHERE message_id = $1', [id])).rowCount === 0 ? true : undefined), {
        timeoutMs: 10_000,
        what: 'the relay to clear the outbox row',
      });
      await new Promise((resolve) => setTimeout(resolve, 500));
      assert.equal(await jobsStored(), jobsBefore + 1, 'the relay republished, and JetStream dropped the copy: one job');
      assert.equal(mailCounts(system.resources.mailDir).get(id), 1);
      const ledgerSettled = await Promise.all(
        system.stack.ports.metrics.mailer.map((port) => metric(port, /notify_finished_redeliveries_total\{[^}]*state="sent"[^}]*\} (\d+)/)),
      );
      assert.deepEqual(ledgerSettled, [0, 0], 'no second job reached a mailer');
    });
  }
});

describe('a mailer killed while it holds jobs', () => {
  test('SIGKILL with 10 jobs held: another replica receives them after the ack wait, and each is mailed once', async () => {
    // One replica takes everything while the relay sits on its answers.
    system.stack.kill('mailer-svc', 'SIGTERM', 1);
    await exitOf(system.stack, 'mailer-svc', 1);
    script.hold('held-');
    const ids: number[] = [];
    for (let n = 0; n < 10; n++) {
      const response = await system.send(tenant, body(`held-${n}@example.com`));
      assert.equal(response.status, 202, response.text);
      ids.push(response.body.message_id as number);
    }
    // Its SMTP pool (5 connections) sits on 5 answers; the other 5 jobs wait for a connection, held all the same.
    // A job counts as held as soon as it is pulled; its SMTP session reaches the relay only after `sending` is confirmed.
    // Exactly 5 at the relay: its pool has 5 connections, so a sixth session would keep this from ever matching.
    await waitFor(
      async () =>
        (await metric(system.stack.ports.metrics.mailer[0] as number, /^notify_mailer_in_flight\{[^}]*\} (\d+)$/m)) === 10 && script.waiting === 5
          ? true
          : undefined,
      {
        timeoutMs: 10_000,
        what: 'mailer 0 to hold all 10 jobs, 5 of them at the relay',
      },
    );

    system.stack.kill('mailer-svc', 'SIGKILL', 0);
    await exitOf(system.stack, 'mailer-svc', 0);
    const killedAt = performance.now();
    // The relay finally answers, on sessions whose client is gone: nothing is stored for them.
    script.release('held-');
    await system.stack.restart('mailer-svc', 1);
    await waitForStates(system.db, ids, { timeoutMs: 30_000, states: ['sent'] });
    const waited = performance.now() - killedAt;
    console.log(`jobs of the killed mailer delivered by the other ${Math.round(waited)} ms after the kill`);
    assert.ok(waited >= 3_000, 'they came back only once their ack wait ran out');

    await new Promise((resolve) => setTimeout(resolve, 500));
    const result = await audit(system.db, system.resources.mailDir, ids);
    assert.deepEqual(result.broken, []);
    assert.equal(result.duplicates, 0);
    const { rows } = await system.db.query<{ attempts: number }>('SELECT attempts FROM messages WHERE id = ANY($1::bigint[])', [ids]);
    assert.ok(
      rows.every((row) => row.attempts === 2),
      'each shows the interrupted attempt and the one that delivered it',
    );
    await system.stack.restart('mailer-svc', 0);
  });

  test('SIGKILL after the relay accepted, before the acknowledgement: the redelivery finds the outcome in the ledger and mails nothing', async () => {
    system.stack.kill('mailer-svc', 'SIGTERM', 1);
    await exitOf(system.stack, 'mailer-svc', 1);
    await system.stack.restart('mailer-svc', 0, { NOTIFY_TEST_FAULT: 'exit-after-send' });
    const response = await system.send(tenant, body('once@example.com'));
    assert.equal(response.status, 202, response.text);
    const id = response.body.message_id as number;

    assert.equal((await exitOf(system.stack, 'mailer-svc', 0)).signal, 'SIGKILL');
    assert.equal(mailCounts(system.resources.mailDir).get(id), 1, 'the relay has the mail');
    await system.stack.restart('mailer-svc', 1);
    // The `sent` event leaves with the ledger write, so the message may be `sent` before the job comes back: what is
    // awaited is the redelivery, settled from the ledger.
    const redeliveries = /notify_finished_redeliveries_total\{[^}]*state="sent"[^}]*\} (\d+)/;
    await waitFor(async () => (await metric(system.stack.ports.metrics.mailer[1] as number, redeliveries)) > 0, {
      timeoutMs: 20_000,
      what: 'the redelivered job settled from the ledger',
    });
    await waitForStates(system.db, [id], { timeoutMs: 20_000, states: ['sent'] });
    await new Promise((resolve) => setTimeout(resolve, 500));

    assert.equal(mailCounts(system.resources.mailDir).get(id), 1, 'the redelivered job was not mailed again');
    assert.equal(script.offers('once@example.com'), 1);
    const message = (await system.db.query('SELECT attempts, last_smtp_code FROM messages WHERE id = $1', [id])).rows[0];
    assert.deepEqual(message, { attempts: 1, last_smtp_code: 250 }, 'recorded as the attempt that sent it');
    assert.equal(await metric(system.stack.ports.metrics.mailer[1] as number, redeliveries), 1);
    await system.stack.restart('mailer-svc', 0, { NOTIFY_TEST_FAULT: 'none' });
  });
});
