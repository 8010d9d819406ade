// Relay failover and routing (docs/operations.md, "Relays, failover and routing"), end to end: a mailer whose SMTP_URL
// lists two relays keeps delivering through the second while the first is down, mails nothing twice, and goes back to
// the first once its circuit's cool-down has passed; a project with its own relay (notifyctl project update
// --smtp-url-file) has its mail delivered there while another project's goes to the default relays.
import assert from 'node:assert/strict';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import { type SmtpSink, startSmtpSink } from '@notify/cli/local';
import { mailCounts, waitForStates } from '../harness/delivery-audit.ts';
import { silentLogger } from '../harness/logger.ts';
import { type System, startSystem, type Tenant } from '../harness/system.ts';
import { waitFor } from '../harness/wait.ts';

/** A relay of the mailer's SMTP_URL: a sink with its own folder, stopped and started again on the same port. */
interface Relay {
  readonly dir: string;
  port: number;
  sink: SmtpSink | undefined;
}

let root: string;
let first: Relay;
let second: Relay;
let system: System;
let tenant: Tenant;

const startRelay = async (relay: Relay): Promise<void> => {
  relay.sink = await startSmtpSink({ host: '127.0.0.1', port: relay.port, dir: relay.dir, logger: silentLogger('relay') });
  relay.port = relay.sink.port;
};

before(async () => {
  root = await mkdtemp(join(tmpdir(), 'notify-relays-'));
  first = { dir: join(root, 'first'), port: 0, sink: undefined };
  second = { dir: join(root, 'second'), port: 0, sink: undefined };
  await startRelay(first);
  await startRelay(second);
  system = await startSystem({
    // A quick cool-down and routes refresh, so the test sees the first relay come back and a project's relay change.
    env: { NOTIFY_PUBLIC_SEND_RATE: '100000/min', RELAY_FAILURE_THRESHOLD: '2', RELAY_COOL_DOWN: '1s', RELAY_ROUTES_REFRESH: '200ms' },
  });
  // The stack gives the mailer the system's own sink; this file's mailer sends through its two relays instead.
  await system.stack.restart('mailer-svc', 0, { SMTP_URL: `smtp://127.0.0.1:${first.port}, smtp://127.0.0.1:${second.port}` });
  tenant = await system.createTenant('relays');
  await system.putTemplate(tenant.projectId, 'welcome');
});

after(async () => {
  await system?.stop();
  await first?.sink?.close();
  await second?.sink?.close();
  if (root) await rm(root, { recursive: true, force: true });
});

async function send(from: Tenant, to: string): Promise<number> {
  const response = await system.send(from, { template: 'welcome', to, channel: 'email', data: { name: 'Ada' } });
  assert.equal(response.status, 202, response.text);
  return response.body.message_id as number;
}

const sendMany = (from: Tenant, prefix: string, count: number): Promise<number[]> =>
  Promise.all(Array.from({ length: count }, (_, index) => send(from, `${prefix}-${index}@example.com`)));

/** How many copies of each message the relay stored, by message id. */
const stored = (relay: Relay): Map<number, number> => mailCounts(relay.dir);

test('with the first relay killed mid-run, every message is delivered through the second, none twice, and the first is used again once it is back', async () => {
  const before = await sendMany(tenant, 'before', 10);
  await waitForStates(system.db, before, { timeoutMs: 15_000, states: ['sent'] });
  assert.equal(before.filter((id) => stored(first).get(id) === 1).length, 10, 'the first relay takes the mail while it is up');

  // Killed while mail keeps coming: what is sent during the outage goes to the second relay.
  const during = sendMany(tenant, 'during', 30);
  await first.sink?.close();
  first.sink = undefined;
  const outage = [...(await during), ...(await sendMany(tenant, 'outage', 20))];
  await waitForStates(system.db, outage, { timeoutMs: 20_000, states: ['sent'] });
  const afterKill = await sendMany(tenant, 'after-kill', 10);
  await waitForStates(system.db, afterKill, { timeoutMs: 15_000, states: ['sent'] });
  assert.ok(
    afterKill.every((id) => stored(second).get(id) === 1 && !stored(first).has(id)),
    'mail sent while the first relay is down goes to the second',
  );

  // Back on the same port: after the cool-down a probe finds it and closes its circuit.
  await startRelay(first);
  const back = await waitFor(
    async () => {
      const id = await send(tenant, 'probe@example.com');
      await waitForStates(system.db, [id], { timeoutMs: 10_000, states: ['sent'] });
      return stored(first).has(id) ? id : undefined;
    },
    { timeoutMs: 15_000, intervalMs: 300, what: 'a message to go through the first relay again' },
  );
  const afterBack = await sendMany(tenant, 'after-back', 10);
  await waitForStates(system.db, afterBack, { timeoutMs: 15_000, states: ['sent'] });
  assert.ok(
    afterBack.every((id) => stored(first).get(id) === 1),
    'the first relay takes the mail again once it is back',
  );

  // None twice: counted by message id across both relays.
  const everything = [...before, ...outage, ...afterKill, back, ...afterBack];
  const copies = everything.map((id) => (stored(first).get(id) ?? 0) + (stored(second).get(id) ?? 0));
  assert.deepEqual(
    copies.filter((count) => count !== 1),
    [],
    'every message stored exactly once across both relays',
  );

  const metrics = await (await fetch(`http://127.0.0.1:${system.stack.ports.metrics.mailer[0]}/metrics`)).text();
  assert.match(metrics, new RegExp(`notify_relay_failovers_total\\{relay="127\\.0\\.0\\.1:${first.port}"[^}]*\\} [1-9]`));
  assert.match(metrics, new RegExp(`notify_relay_circuit_state\\{relay="127\\.0\\.0\\.1:${first.port}"[^}]*\\} 0`));
});

test("a project with its own relay has its mail delivered there, another project's goes to the default relays", async () => {
  const own = await system.createTenant('own-relay');
  await system.putTemplate(own.projectId, 'welcome');
  const ownRelay = `127.0.0.1:${system.sink.port}`;
  // The relay's password goes in a file, as the docs tell an operator: notifyctl refuses it on the command line.
  const relays = join(root, 'own-relays');
  await writeFile(relays, `smtp://pool-b:s3cret@${ownRelay}\n`);
  const shown = await system.notifyctlOk('project', 'update', '--id', String(own.projectId), '--smtp-url-file', relays);
  assert.match(shown, new RegExp(ownRelay.replace(/\./g, '\\.')));
  assert.doesNotMatch(shown, /s3cret/);
  await waitFor(() => system.stack.logs.lines().some((line) => line.text.includes("routing the project's mail through its own relays")), {
    timeoutMs: 5_000,
    what: 'the mailer to learn the project relay',
  });

  const ownId = await send(own, 'customer@example.com');
  const otherId = await send(tenant, 'someone@example.com');
  await waitForStates(system.db, [ownId, otherId], { timeoutMs: 15_000, states: ['sent'] });
  assert.equal(mailCounts(system.resources.mailDir).get(ownId), 1);
  assert.equal(stored(first).get(otherId), 1);
  assert.ok(!stored(first).has(ownId) && !stored(second).has(ownId) && !mailCounts(system.resources.mailDir).has(otherId));
  assert.ok(
    system.stack.logs.lines().every((line) => !line.text.includes('s3cret')),
    'no relay password in any log',
  );

  await system.notifyctlOk('project', 'update', '--id', String(own.projectId), '--smtp-url', 'default');
  await waitFor(() => system.stack.logs.lines().some((line) => line.text.includes("routing the project's mail through SMTP_URL again")), {
    timeoutMs: 5_000,
    what: 'the mailer to drop the project relay',
  });
  const defaultId = await send(own, 'customer-again@example.com');
  await waitForStates(system.db, [defaultId], { timeoutMs: 15_000, states: ['sent'] });
  assert.equal(stored(first).get(defaultId), 1);
});

test("a mailer started while dispatch-svc is down takes no job until it knows the projects' relays: a project's mail still leaves through its own", async () => {
  const own = await system.createTenant('own-relay-at-start');
  await system.putTemplate(own.projectId, 'welcome');
  await system.notifyctlOk('project', 'update', '--id', String(own.projectId), '--smtp-url', `smtp://127.0.0.1:${system.sink.port}`);
  // A job waits in JetStream while no mailer runs, then dispatch-svc goes away and the mailer starts again.
  system.stack.kill('mailer-svc', 'SIGTERM', 0);
  await system.stack.exited('mailer-svc', 0);
  const id = await send(own, 'early@example.com');
  system.stack.kill('dispatch-svc', 'SIGTERM');
  await system.stack.exited('dispatch-svc');
  const mailerBack = system.stack.restart('mailer-svc', 0);
  await new Promise((resolve) => setTimeout(resolve, 3_000));
  const { rows } = await system.db.query<{ state: string }>('SELECT state FROM messages WHERE id = $1', [id]);
  assert.equal(rows[0]?.state, 'queued', 'not taken while the project relays are unknown');
  assert.ok(![stored(first), stored(second), mailCounts(system.resources.mailDir)].some((mails) => mails.has(id)), 'mailed nowhere yet');

  await system.stack.restart('dispatch-svc');
  await mailerBack;
  await waitForStates(system.db, [id], { timeoutMs: 15_000, states: ['sent'] });
  assert.equal(mailCounts(system.resources.mailDir).get(id), 1, 'through the project relay');
  assert.ok(!stored(first).has(id) && !stored(second).has(id), 'not through SMTP_URL');
});
