// Case 10 of the delivery guarantees (docs/delivery-guarantees.md): a soak. Sends go on without pause while a mailer,
// dispatch-svc and NATS (a private nats-server) are killed with SIGKILL and started again, in turn. Then, once the
// pipeline has drained, every 202 must have become exactly one email, or a `failed` record, and nothing may be left
// in queued, sending or deferred. The one exception is the duplicate window a kill can open (the relay accepted, the
// replica died before recording it): a second email is accepted only for a message with an attempt that recorded
// `sending` and no outcome, and is counted. `npm run test:chaos` runs it for CHAOS_DURATION (default 2m); `npm test`
// for 30 s. Clients behave as the contract asks: a 503 is retried after a pause with the same Idempotency-Key.
//
// CHAOS_NATS=cluster runs it against NATS as production runs it: three clustered nodes (private-nats-cluster.ts),
// streams and the outcome ledger with three replicas (NATS_STREAM_REPLICAS=3), the services given all three URLs. The
// NATS fault then SIGKILLs one node at a time, the leader of the jobs stream every other time, and restarts it. A
// quorum (two nodes) holds every acknowledged write, so no duplicate may come from a node kill: only the mailer kill's
// window is tolerated. `npm test` runs both forms for 30 s.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { parseDuration } from '@notify/platform';
import { topology } from '@notify/proto';
import { attemptsAcrossOutages, attemptsWithoutOutcome, audit, statesOf, whereInFlight } from '../harness/delivery-audit.ts';
import { type PrivateNats, startPrivateNats } from '../harness/private-nats.ts';
import { type PrivateNatsCluster, startPrivateNatsCluster } from '../harness/private-nats-cluster.ts';
import { startReliableSystem, underFaults } from '../harness/reliable-system.ts';
import { gatewayReachesServices } from '../harness/service-waits.ts';
import { sendSteadily, type Tally } from '../harness/steady-senders.ts';
import type { System, Tenant } from '../harness/system.ts';
import { waitFor } from '../harness/wait.ts';

const durationMs = parseDuration(process.env.CHAOS_DURATION ?? '2m');
/** CHAOS_NATS=cluster: a three-node JetStream cluster instead of one nats-server (single). */
const natsForm = process.env.CHAOS_NATS ?? 'single';
if (!['single', 'cluster'].includes(natsForm)) throw new Error(`CHAOS_NATS must be single or cluster, got ${natsForm}`);
const clustered = natsForm === 'cluster';
/** Senders working at once; each waits for its answer before the next send. */
const senders = 4;
/** How long a client keeps retrying one send (503 or no answer) before giving up on it. */
const giveUpMs = 30_000;

let nats: PrivateNats | undefined;
let cluster: PrivateNatsCluster | undefined;
let system: System;
let tenant: Tenant;

before(async () => {
  if (clustered) cluster = await startPrivateNatsCluster();
  else nats = await startPrivateNats();
  system = await startReliableSystem({
    nats: cluster ?? nats,
    mailerReplicas: 2,
    env: {
      NOTIFY_PUBLIC_SEND_RATE: '1000000/min',
      ...underFaults,
      ...(clustered ? { NATS_STREAM_REPLICAS: '3' } : {}),
    },
  });
  tenant = await system.createTenant('soak');
  await system.putTemplate(tenant.projectId, 'welcome');
});

after(async () => {
  if (nats && !nats.running) await nats.start();
  for (const node of cluster?.nodes ?? []) if (!node.running) await node.start();
  await system?.stop();
  await nats?.stop();
  await cluster?.stop();
});

const pause = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** When NATS was down: from just before its kill to just after it answered again. */
const natsOutages: { from: Date; to: Date }[] = [];
/** When a mailer was SIGKILLed. */
const mailerKills: Date[] = [];
/** For the failure message and the counts: which cluster node each NATS fault killed. */
const nodeKills: string[] = [];

/** The single nats-server killed and restarted; with a cluster, one node: the jobs stream's leader every other round. */
async function killNats(round: number): Promise<void> {
  if (!cluster) {
    assert.ok(nats);
    await nats.kill('SIGKILL');
    await pause(2_000);
    await nats.start();
    return;
  }
  const leader = await cluster.streamLeader(topology(system.resources.natsPrefix).jobsStream);
  const target = round % 2 === 0 ? leader : (leader + 1) % cluster.nodes.length;
  const node = cluster.nodes[target];
  assert.ok(node);
  nodeKills.push(`${node.name}${target === leader ? ' (jobs leader)' : ''}`);
  await node.kill('SIGKILL');
  await pause(2_000);
  // Back on its store, and caught up: the next kill must not take a quorum away.
  await node.start();
}

/** The faults, in turn: each kills one component with SIGKILL and brings it back. */
const faults: { name: string; run(round: number): Promise<void> }[] = [
  {
    name: 'mailer',
    async run(round) {
      const index = round % 2;
      mailerKills.push(new Date());
      system.stack.kill('mailer-svc', 'SIGKILL', index);
      await pause(1_000);
      await system.stack.restart('mailer-svc', index);
    },
  },
  {
    name: 'dispatch-svc',
    async run() {
      system.stack.kill('dispatch-svc', 'SIGKILL');
      await system.stack.restart('dispatch-svc');
    },
  },
  {
    name: clustered ? 'a NATS node' : 'NATS',
    async run(round) {
      const from = new Date();
      await killNats(round);
      natsOutages.push({ from, to: new Date() });
    },
  },
];

test(`a ${Math.round(durationMs / 1_000)} s soak with a mailer, dispatch-svc and ${clustered ? 'one node of a three-node NATS cluster' : 'NATS'} killed in turn: every 202 is one email or a failure`, async () => {
  if (cluster) {
    // The services made every stream and the outcome ledger with three replicas, one on each node.
    const prefix = system.resources.natsPrefix.toUpperCase();
    const ours = (await cluster.streams()).filter((stream) => stream.name.startsWith(prefix) || stream.name.startsWith(`KV_${prefix}`));
    const names = topology(system.resources.natsPrefix);
    assert.ok(
      ours.some((stream) => stream.name === names.jobsStream) && ours.some((stream) => stream.name === `KV_${names.outcomesBucket}`),
      JSON.stringify(ours),
    );
    assert.deepEqual(
      ours.filter((stream) => stream.replicas !== 3),
      [],
      'every stream and bucket has three replicas',
    );
  }
  const tally: Tally = { accepted: [], abandoned: 0, retried: 0 };
  const stop = new AbortController();
  const started = Date.now();
  const clients = sendSteadily(system, tenant, { count: senders, stop: stop.signal, tally, giveUpMs });

  // With a cluster, a fault at least every 20 s: a long run kills many nodes, leaders and followers, not two or three.
  const interval = Math.max(5_000, clustered ? Math.min(20_000, Math.floor(durationMs / 8)) : Math.floor(durationMs / 8));
  const injected: string[] = [];
  /** Each fault with the time it was injected, for the failure message. */
  const faultLog: string[] = [];
  for (let round = 0; round < faults.length || Date.now() - started + interval <= durationMs; round++) {
    await pause(interval / 2);
    const fault = faults[round % faults.length];
    assert.ok(fault);
    faultLog.push(`${fault.name} at ${new Date().toISOString()}`);
    await fault.run(Math.floor(round / faults.length));
    injected.push(fault.name);
    await pause(interval / 2);
  }
  await pause(Math.max(0, durationMs - (Date.now() - started)));
  stop.abort();
  await clients;
  const sendingEnded = Date.now();

  await gatewayReachesServices(() => system.send(tenant, { template: 'no-such-template', to: 'x@example.com', channel: 'email', data: {} }), 30_000);
  const ids = tally.accepted;
  await waitFor(
    async () => {
      const states = await statesOf(system.db, ids);
      return ids.every((id) => ['sent', 'failed'].includes(states.get(id) ?? '')) ? true : undefined;
    },
    { timeoutMs: 90_000, intervalMs: 500, what: 'every accepted message to be sent or failed' },
  ).catch(async (error: unknown) => {
    const states = await statesOf(system.db, ids);
    const inFlight = ids.filter((id) => !['sent', 'failed'].includes(states.get(id) ?? ''));
    const stuck = inFlight.map((id) => `${id}:${states.get(id) ?? 'missing'}`);
    const where = await whereInFlight(system.db, system.resources.mailDir, (cluster ?? nats)?.url ?? '', system.resources.natsPrefix, inFlight).catch(
      (cause: unknown) => `not found: ${String(cause)}`,
    );
    throw new Error(
      `${String(error)}; still in flight: ${stuck.slice(0, 20).join(', ')}${stuck.length > 20 ? ` and ${stuck.length - 20} more` : ''}; ${where}; faults: ${JSON.stringify(faultLog)}`,
    );
  });
  // Late duplicates, if any, arrive before counting.
  await pause(2_000);

  const result = await audit(system.db, system.resources.mailDir, ids);
  const brokenIds = result.broken.map((entry) => entry.id);
  // With a cluster, the attempt must have been cut off by a mailer kill (its `sending` at most 5 s before one): a node
  // kill must not leave an attempt without its outcome.
  const interrupted = await attemptsWithoutOutcome(system.db, brokenIds, clustered ? { at: mailerKills, withinMs: 5_000 } : undefined);
  // A cluster keeps what it acknowledged through a node kill: no duplicate is explained by one.
  const acrossNatsKills = clustered ? new Map<number, number>() : await attemptsAcrossOutages(system.db, brokenIds, natsOutages);
  // A duplicate is explained by the windows docs/delivery-guarantees.md lists: at most one extra email per attempt
  // that was cut off after `sending` (a mailer killed after the relay accepted), or, with a single nats-server, per
  // attempt that was in flight across a NATS kill. Anything else (an email missing, a failure with an email, more
  // copies) breaks the promise.
  const explainedBy = (entry: { id: number }): number => (interrupted.get(entry.id) ?? 0) + (acrossNatsKills.get(entry.id) ?? 0);
  const explained = result.broken.filter((entry) => entry.state === 'sent' && entry.emails >= 2 && entry.emails - 1 <= explainedBy(entry));
  const broken = result.broken.filter((entry) => !explained.includes(entry));
  const counts = {
    nats: clustered ? 'cluster of 3, replicas 3' : 'single',
    seconds: Math.round((sendingEnded - started) / 1_000),
    faults: injected.join(', '),
    ...(clustered ? { nodesKilled: nodeKills.join(', ') } : {}),
    accepted: result.accepted,
    delivered: result.delivered,
    failed: result.failed,
    duplicatesAtSmtp: result.duplicates,
    duplicatesAfterAnInterruptedAttempt: explained.filter((entry) => interrupted.has(entry.id)).length,
    duplicatesAcrossANatsKill: explained.filter((entry) => !interrupted.has(entry.id)).length,
    retriedRequests: tally.retried,
    abandonedSends: tally.abandoned,
    drainSeconds: Math.round((Date.now() - sendingEnded) / 1_000),
  };
  console.log(`soak: ${JSON.stringify(counts)}`);
  assert.ok(injected.length >= 3, `each fault at least once (${injected.join(', ')})`);
  assert.ok(result.accepted > 0);
  if (result.broken.length > 0) {
    // What happened to each (explained duplicates included), for whoever reads the failure or the counts.
    const { rows: history } = await system.db.query<{ message_id: number; state: string; attempt: number; occurred_at: Date; reason: string | null }>(
      'SELECT message_id, state, attempt, occurred_at, reason FROM message_events WHERE message_id = ANY($1::bigint[]) ORDER BY message_id, id',
      [brokenIds],
    );
    console.log(
      `soak: histories of the broken messages and duplicates:\n${history.map((row) => `  ${row.message_id} ${row.attempt} ${row.state} ${row.occurred_at.toISOString()} ${row.reason ?? ''}`).join('\n')}\nfaults: ${JSON.stringify(faultLog)}; nodes killed: ${JSON.stringify(nodeKills)}; mailer kills: ${JSON.stringify(mailerKills)}`,
    );
  }
  assert.deepEqual(broken, [], "every 202 is exactly one email (sent) or none (failed), a kill's duplicate window aside");
  assert.equal(result.delivered + result.failed + explained.length, result.accepted);
  const { rows } = await system.db.query<{ n: number }>(`SELECT count(*)::int AS n FROM messages WHERE state IN ('queued', 'sending', 'deferred')`);
  assert.equal(rows[0]?.n, 0, 'nothing is stuck in queued, sending or deferred');
});
