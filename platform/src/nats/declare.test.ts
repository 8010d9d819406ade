// Declarations at start against a real JetStream: on a three-node cluster that has lost its quorum (no meta leader,
// as while a release's services all start on a cluster just formed) a declaration waits until the cluster answers
// again; a configuration JetStream refuses fails at once; a declaration that never gets an answer fails at its deadline.
// And a declaration kept on a connection is made again when NATS comes back without its store.
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { Writable } from 'node:stream';
import { after, before, test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { testEnvironment } from '@notify/test/harness/environment.ts';
import { silentLogger } from '@notify/test/harness/logger.ts';
import { startPrivateNats } from '@notify/test/harness/private-nats.ts';
import { type PrivateNatsCluster, startPrivateNatsCluster } from '@notify/test/harness/private-nats-cluster.ts';
import { waitFor } from '@notify/test/harness/wait.ts';
import { createLogger } from '../logger.ts';
import { connectNats, declareJetStream, ensureStream, isPassingJetStreamFailure, jetstreamManager, type NatsConnection } from './index.ts';

const prefix = `T${randomBytes(4).toString('hex')}_`;
const logger = silentLogger('declare-test');
let nats: NatsConnection;

before(async () => {
  nats = await connectNats(testEnvironment.natsUrl, 'declare-test', logger);
});

after(async () => {
  const jsm = await jetstreamManager(nats);
  for await (const name of jsm.streams.names()) if (name.startsWith(prefix)) await jsm.streams.delete(name);
  await nats.close();
});

/** A logger that keeps the messages of what it writes. */
function recordingLogger(): { logger: ReturnType<typeof createLogger>; messages: string[] } {
  const messages: string[] = [];
  const sink = new Writable({
    write(chunk, _encoding, done) {
      messages.push((JSON.parse(String(chunk)) as { msg: string }).msg);
      done();
    },
  });
  return { logger: createLogger('declare-test', 'info', sink), messages };
}

test('a request nobody answers in time and one nobody listens to are passing failures; a stream JetStream refuses is not', async () => {
  const silent = nats.subscribe(`${prefix}.silent`);
  const timedOut = await nats.request(`${prefix}.silent`, '', { timeout: 50 }).catch((error: unknown) => error);
  silent.unsubscribe();
  assert.equal(isPassingJetStreamFailure(timedOut), true, String(timedOut));
  const unheard = await nats.request(`${prefix}.nobody`, '', { timeout: 1_000 }).catch((error: unknown) => error);
  assert.equal(isPassingJetStreamFailure(unheard), true, String(unheard));
  const jsm = await jetstreamManager(nats);
  const refused = await jsm.streams.add({ name: `${prefix}BAD`, subjects: [`${prefix}.bad`], max_msgs: -2, num_replicas: 9 }).catch((error: unknown) => error);
  assert.ok(refused instanceof Error, 'JetStream refuses five more replicas than it has servers');
  assert.equal(isPassingJetStreamFailure(refused), false, String(refused));
});

test('a configuration JetStream refuses fails the declaration at its first try', async () => {
  let tries = 0;
  const jsm = await jetstreamManager(nats);
  await assert.rejects(
    declareJetStream(
      'a stream with nine replicas',
      async () => {
        tries++;
        await ensureStream(jsm, { name: `${prefix}NINE`, subjects: [`${prefix}.nine`], retention: 'limits' }, 9);
      },
      { logger, pauseMs: 10 },
    ),
  );
  assert.equal(tries, 1);
});

test('a declaration that never gets an answer fails with that failure once its deadline has passed', async () => {
  const silent = nats.subscribe(`${prefix}.never`);
  let tries = 0;
  const started = Date.now();
  await assert.rejects(
    declareJetStream(
      'an unanswered request',
      async () => {
        tries++;
        await nats.request(`${prefix}.never`, '', { timeout: 50 });
      },
      { logger, deadlineMs: 600, pauseMs: 100 },
    ),
    { name: 'TimeoutError' },
  );
  silent.unsubscribe();
  assert.ok(tries >= 3, `tried ${tries} times`);
  assert.ok(Date.now() - started >= 600, 'tried until the deadline');
});

let cluster: PrivateNatsCluster | undefined;
after(async () => cluster?.stop());

test('on a cluster without a quorum a replicated stream is declared once two nodes are back, each failed try logged', async () => {
  cluster = await startPrivateNatsCluster();
  const [survivor, ...others] = cluster.nodes;
  assert.ok(survivor);
  for (const node of others) await node.kill('SIGKILL');
  const client = await connectNats(survivor.url, 'declare-test-cluster', logger);
  try {
    const { logger: recording, messages } = recordingLogger();
    const failure = declareJetStream(
      'a stream with three replicas',
      async () => ensureStream(await jetstreamManager(client, { timeout: 1_000 }), { name: 'DECLARED', subjects: ['declared.>'], retention: 'limits' }, 3),
      { logger: recording, pauseMs: 200 },
    ).then(
      () => undefined,
      (error: unknown) => error,
    );
    // Long enough for several tries to fail while only one node of three runs.
    await sleep(3_000);
    await Promise.all(others.map((node) => node.start()));
    assert.equal(await failure, undefined);
    assert.ok(messages.filter((message) => message === 'JetStream did not answer a declaration; trying again').length >= 2, messages.join('\n'));
    const declaredStream = (await cluster.streams()).find((stream) => stream.name === 'DECLARED');
    assert.equal(declaredStream?.replicas, 3);
  } finally {
    await client.close();
  }
});

test('a declaration kept on a connection is made again when NATS comes back without its store', async () => {
  const server = await startPrivateNats();
  const connection = await connectNats(server.url, 'declare-test', logger);
  try {
    const declaration = { name: `${prefix}KEPT`, subjects: [`${prefix.toLowerCase()}kept`], retention: 'workqueue' } as const;
    const declare = async () => ensureStream(await jetstreamManager(connection), declaration, 1);
    await declareJetStream('a kept stream', declare, { logger, redeclareOn: connection, pauseMs: 100 });
    await server.kill('SIGTERM');
    server.emptyStore();
    await server.start();
    const found = async () => (await jetstreamManager(connection)).streams.info(declaration.name).then(() => true);
    await waitFor(found, { timeoutMs: 15_000, what: 'the stream declared again' });
  } finally {
    await connection.close();
    await server.stop();
  }
});
