// A durable consumer on a three-node JetStream cluster (private-nats-cluster.ts) whose consumer leader is SIGKILLed:
// the pull request it had open died with that node, and the consumer must notice and pull from the new leader within
// seconds, not after the client's default 30 s of missed heartbeats (platform/src/nats/durable-consumer.ts). Nothing
// the cluster acknowledged before the kill is lost.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { AckPolicy, jetstream, jetstreamManager } from '@nats-io/jetstream';
import { connect, type NatsConnection } from '@nats-io/transport-node';
import { createLogger } from '@notify/platform';
import { consumeDurably } from '@notify/platform/nats';
import { type PrivateNatsCluster, startPrivateNatsCluster } from '../harness/private-nats-cluster.ts';
import { waitFor } from '../harness/wait.ts';

let cluster: PrivateNatsCluster;
let nc: NatsConnection | undefined;

before(async () => {
  cluster = await startPrivateNatsCluster();
});

after(async () => {
  await nc?.close();
  await cluster?.stop();
});

test('a durable consumer whose leader node is SIGKILLed resumes on the new leader within seconds, and nothing acknowledged is lost', async (t) => {
  // Created through all three nodes, with three replicas, as the services create theirs.
  const admin = await connect({ servers: cluster.url.split(',') });
  const jsm = await jetstreamManager(admin);
  await jsm.streams.add({ name: 'CLUSTER_JOBS', subjects: ['cluster.jobs'], num_replicas: 3 });
  await jsm.consumers.add('CLUSTER_JOBS', { durable_name: 'worker', ack_policy: AckPolicy.Explicit });
  // A new consumer's group may take a moment to elect its leader.
  const consumerLeader = await waitFor(async () => (await jsm.consumers.info('CLUSTER_JOBS', 'worker')).cluster?.leader, {
    timeoutMs: 10_000,
    intervalMs: 100,
    what: 'the consumer to elect a leader',
  });
  const leader = cluster.nodes.findIndex((node) => node.name === consumerLeader);
  assert.ok(leader >= 0, `consumer leader ${consumerLeader} is one of the nodes`);
  await admin.close();

  // The worker talks to another node only, so the kill does not break its connection: only its pull request is lost.
  const other = cluster.nodes[(leader + 1) % cluster.nodes.length];
  assert.ok(other);
  nc = await connect({ servers: other.url });
  const js = jetstream(nc);
  const handled: string[] = [];
  const worker = consumeDurably({
    js,
    stream: 'CLUSTER_JOBS',
    consumer: 'worker',
    batchSize: 1,
    concurrency: 1,
    logger: createLogger('cluster-test', 'error'),
    async handle(messages) {
      for (const message of messages) {
        handled.push(message.string());
        message.ack();
      }
    },
  });
  try {
    await js.publish('cluster.jobs', 'before');
    await waitFor(() => handled.includes('before'), { timeoutMs: 10_000, what: 'the job published before the kill' });

    const node = cluster.nodes[leader];
    assert.ok(node);
    await node.kill('SIGKILL');
    // Accepted once a quorum (the two nodes left) has it: retried while the stream elects a new leader.
    await waitFor(() => js.publish('cluster.jobs', 'after', { msgID: 'after', timeout: 2_000 }).then(() => true), {
      timeoutMs: 20_000,
      intervalMs: 250,
      what: 'a publish accepted by the two nodes left',
    });
    const published = Date.now();
    await waitFor(() => handled.includes('after'), { timeoutMs: 30_000, intervalMs: 100, what: 'the job published after the kill to be handled' });
    const tookMs = Date.now() - published;
    t.diagnostic(`handled ${tookMs} ms after it was published`);
    assert.ok(tookMs < 20_000, `handled ${tookMs} ms after it was published: the lost pull request was noticed late`);

    await node.start();
    // The worker's ack is sent without waiting for the new consumer leader to apply it: read until it has. A lost ack
    // would stay pending until the ack wait (30 s) and then bring the job back a second time.
    const manager = await jetstreamManager(nc);
    await waitFor(async () => (await manager.consumers.info('CLUSTER_JOBS', 'worker')).num_ack_pending === 0, {
      timeoutMs: 5_000,
      intervalMs: 100,
      what: "the consumer leader to apply the worker's ack",
    });
    assert.deepEqual(handled, ['before', 'after'], 'each job handled once');
  } finally {
    await worker.stop();
  }
});
