// consumeDurably against a real NATS server: the handler gets what was received together, at most `batchSize` at a
// time and at most `concurrency` batches at once, and stopping still handles what was received.
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { after, before, test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { testEnvironment } from '@notify/test/harness/environment.ts';
import { silentLogger } from '@notify/test/harness/logger.ts';
import { waitFor } from '@notify/test/harness/wait.ts';
import { consumeDurably, type DurableConsumer } from './durable-consumer.ts';
import { connectNats, ensureConsumer, type JetStreamManager, type JsMsg, jetstream, jetstreamManager, type NatsConnection, nanoseconds } from './index.ts';

const prefix = `T${randomBytes(4).toString('hex')}_`;
const logger = silentLogger('dispatch-test');
let nats: NatsConnection;
let jsm: JetStreamManager;
const streams: string[] = [];

before(async () => {
  nats = await connectNats(testEnvironment.natsUrl, 'dispatch-test', logger);
  jsm = await jetstreamManager(nats);
});

after(async () => {
  for (const stream of streams) await jsm.streams.delete(stream).catch(() => false);
  await nats.close();
});

/** A work-queue stream of its own with one durable consumer, as the events stream has. */
async function newStream(name: string): Promise<{ stream: string; subject: string; consumer: string }> {
  const stream = `${prefix}${name}`;
  const subject = `${prefix.toLowerCase()}${name.toLowerCase()}`;
  await jsm.streams.add({ name: stream, subjects: [subject], retention: 'workqueue' });
  streams.push(stream);
  await ensureConsumer(jsm, stream, { durable_name: 'worker', ack_wait: nanoseconds(10_000), max_deliver: -1 });
  return { stream, subject, consumer: 'worker' };
}

const numberOf = (message: JsMsg): number => Number(message.string());

async function publish(subject: string, from: number, to: number): Promise<void> {
  const js = jetstream(nats);
  for (let value = from; value <= to; value += 1) await js.publish(subject, new TextEncoder().encode(String(value)));
}

/** Waits until the server has handed out `count` messages and holds none back, then gives the client time to read them. */
async function delivered(stream: string, consumer: string, count: number): Promise<void> {
  await waitFor(
    async () => {
      const info = await jsm.consumers.info(stream, consumer);
      return info.num_pending === 0 && info.num_ack_pending === count;
    },
    { timeoutMs: 5_000, intervalMs: 25, what: `${count} messages handed out` },
  );
  await sleep(500);
}

/** Publishes four messages, then consumes them; resolves to the batches they were handed over in. */
async function consumeFourPublishedBefore(name: string): Promise<number[][]> {
  const { stream, subject, consumer } = await newStream(name);
  await publish(subject, 1, 4);
  const batches: number[][] = [];
  const consuming = consumeDurably({
    js: jetstream(nats),
    stream,
    consumer,
    batchSize: 16,
    concurrency: 1,
    logger,
    async handle(messages) {
      batches.push(messages.map(numberOf));
      for (const message of messages) message.ack();
    },
  });
  try {
    await waitFor(async () => batches.flat().length === 4, { timeoutMs: 5_000, intervalMs: 25, what: 'the four messages' });
    return batches;
  } finally {
    await consuming.stop();
  }
}

test('messages received together are handled in one batch, without waiting for more', async () => {
  // The first pull brings all four at once, and on loopback they nearly always arrive in one read; how the server's
  // writes are split is not the consumer's to decide, so a run where they were is tried again, twice at most.
  const runs: number[][][] = [];
  for (let run = 1; run <= 3 && !runs.some((batches) => batches.length === 1); run += 1) runs.push(await consumeFourPublishedBefore(`TOGETHER${run}`));
  assert.deepEqual(runs.at(-1), [[1, 2, 3, 4]], JSON.stringify(runs));
  for (const batches of runs) assert.deepEqual(batches.flat(), [1, 2, 3, 4], 'each message handled once, in order');
});

test('the messages received while a batch is handled make up the next one, up to the batch size', async () => {
  const { stream, subject, consumer } = await newStream('BATCHES');
  const batches: number[][] = [];
  let busy = 0;
  let mostBusy = 0;
  const firstBatchDone = Promise.withResolvers<void>();
  const consuming: DurableConsumer = consumeDurably({
    js: jetstream(nats),
    stream,
    consumer,
    batchSize: 4,
    concurrency: 1,
    logger,
    async handle(messages) {
      busy += 1;
      mostBusy = Math.max(mostBusy, busy);
      batches.push(messages.map(numberOf));
      if (batches.length === 1) await firstBatchDone.promise;
      for (const message of messages) message.ack();
      busy -= 1;
    },
  });
  try {
    await publish(subject, 1, 1);
    await waitFor(async () => batches.length === 1, { timeoutMs: 5_000, intervalMs: 25, what: 'the first batch' });
    assert.deepEqual(batches, [[1]], 'a lone message is handled at once');
    await publish(subject, 2, 8);
    await delivered(stream, consumer, 8);
    assert.equal(batches.length, 1, 'nothing else is handled while the only handler is busy');

    firstBatchDone.resolve();
    await waitFor(async () => (await jsm.consumers.info(stream, consumer)).num_ack_pending === 0, {
      timeoutMs: 5_000,
      intervalMs: 25,
      what: 'every message handled',
    });
    assert.deepEqual(batches[1], [2, 3, 4, 5], 'the next batch is what had been received, up to the batch size');
    assert.deepEqual(batches.flat(), [1, 2, 3, 4, 5, 6, 7, 8], 'each message handled once, in order');
    assert.ok(
      batches.every((batch) => batch.length >= 1 && batch.length <= 4),
      JSON.stringify(batches),
    );
    assert.equal(mostBusy, 1);
  } finally {
    firstBatchDone.resolve();
    await consuming.stop();
  }
});

test('no more than `concurrency` batches are handled at once, and stopping handles what was received', async () => {
  const { stream, subject, consumer } = await newStream('CONCURRENCY');
  const handled: number[] = [];
  let busy = 0;
  let mostBusy = 0;
  const release = Promise.withResolvers<void>();
  const consuming = consumeDurably({
    js: jetstream(nats),
    stream,
    consumer,
    batchSize: 1,
    concurrency: 3,
    logger,
    async handle(messages) {
      busy += 1;
      mostBusy = Math.max(mostBusy, busy);
      await release.promise;
      for (const message of messages) {
        handled.push(numberOf(message));
        message.ack();
      }
      busy -= 1;
    },
  });
  await publish(subject, 1, 6);
  await delivered(stream, consumer, 6);
  assert.equal(busy, 3, 'three single-message batches at once');

  const stopping = consuming.stop();
  release.resolve();
  await stopping;
  assert.equal(mostBusy, 3);
  assert.deepEqual(handled.sort(), [1, 2, 3, 4, 5, 6], 'the messages waiting in hand were handled before stop() resolved');
  await waitFor(async () => (await jsm.streams.info(stream)).state.messages === 0, { timeoutMs: 5_000, intervalMs: 25, what: 'every message acknowledged' });
});

test('a batch whose handler fails is left to its ack wait and offered again, and consuming goes on', async () => {
  const { stream, subject, consumer } = await newStream('FAILURE');
  await ensureConsumer(jsm, stream, { durable_name: consumer, ack_wait: nanoseconds(1_000), max_deliver: -1 });
  const seen: number[] = [];
  const consuming = consumeDurably({
    js: jetstream(nats),
    stream,
    consumer,
    batchSize: 4,
    concurrency: 1,
    logger,
    async handle(messages) {
      seen.push(...messages.map(numberOf));
      if (messages.some((message) => message.info.deliveryCount === 1 && numberOf(message) === 1)) throw new Error('handler broke');
      for (const message of messages) message.ack();
    },
  });
  try {
    await publish(subject, 1, 3);
    await waitFor(async () => (await jsm.streams.info(stream)).state.messages === 0, { timeoutMs: 8_000, intervalMs: 25, what: 'every message acknowledged' });
    assert.equal(seen.filter((value) => value === 1).length, 2, 'the message of the failed batch came back once');
  } finally {
    await consuming.stop();
  }
});

test('with a linger, a trickle of messages waits to share a batch, while a full batch starts at once', async () => {
  const { stream, subject, consumer } = await newStream('LINGER');
  const batches: { values: number[]; at: number }[] = [];
  const consuming = consumeDurably({
    js: jetstream(nats),
    stream,
    consumer,
    batchSize: 5,
    lingerMs: 1_000,
    concurrency: 1,
    logger,
    async handle(messages) {
      batches.push({ values: messages.map(numberOf), at: Date.now() });
      for (const message of messages) message.ack();
    },
  });
  try {
    const started = Date.now();
    for (let value = 1; value <= 3; value += 1) {
      await publish(subject, value, value);
      await sleep(50);
    }
    await waitFor(async () => batches.length === 1, { timeoutMs: 5_000, intervalMs: 25, what: 'the lingering batch' });
    assert.deepEqual(batches[0]?.values, [1, 2, 3], 'three messages 50 ms apart share one batch');
    assert.ok((batches[0]?.at ?? 0) - started >= 900, 'it waited for the linger');

    const fullStarted = Date.now();
    await publish(subject, 4, 8);
    await waitFor(async () => batches.length === 2, { timeoutMs: 5_000, intervalMs: 25, what: 'the full batch' });
    assert.deepEqual(batches[1]?.values, [4, 5, 6, 7, 8]);
    assert.ok((batches[1]?.at ?? 0) - fullStarted < 900, 'a full batch does not wait for the linger');
  } finally {
    await consuming.stop();
  }
});
