import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { Writable } from 'node:stream';
import { after, before, test } from 'node:test';
import { createLogger, createRegistry, type Registry } from '@notify/platform';
import { connectNats, ensureConsumer, ensureStream, type JetStreamManager, jetstream, jetstreamManager, type NatsConnection } from '@notify/platform/nats';
import { streamDeclarations, topology } from '@notify/proto';
import { testEnvironment } from '@notify/test/harness/environment.ts';
import { waitFor } from '@notify/test/harness/wait.ts';
import { startConsumerMetrics, watchedConsumers } from './jetstream-metrics.ts';

const names = topology(`t${randomBytes(4).toString('hex')}_`);
const logLines: Record<string, unknown>[] = [];
const logger = createLogger(
  'dispatch-test',
  'debug',
  new Writable({
    write: (chunk: Buffer, _encoding, done) => {
      for (const line of chunk.toString().split('\n').filter(Boolean)) logLines.push(JSON.parse(line) as Record<string, unknown>);
      done();
    },
  }),
);
let nats: NatsConnection;
let jsm: JetStreamManager;

before(async () => {
  nats = await connectNats(testEnvironment.natsUrl, 'dispatch-test', logger);
  jsm = await jetstreamManager(nats);
  for (const stream of [streamDeclarations(names).jobs, streamDeclarations(names).events]) await ensureStream(jsm, stream, 1);
  await ensureConsumer(jsm, names.jobsStream, { durable_name: names.mailerConsumer, ack_wait: 30_000_000_000 });
});

after(async () => {
  for (const stream of [names.jobsStream, names.eventsStream]) await jsm.streams.delete(stream).catch(() => false);
  await nats.close();
});

/** The gauge's value for one consumer, or undefined while it has none. */
async function value(registry: Registry, metric: string, consumer: string): Promise<number | undefined> {
  const gauge = registry.getSingleMetric(metric);
  assert.ok(gauge, `${metric} is registered`);
  return (await gauge.get()).values.find((sample) => sample.labels.consumer === consumer)?.value;
}

test('the gauges follow the mailer consumer: pending, held unacknowledged, and received again', async () => {
  const js = jetstream(nats);
  for (let id = 1; id <= 5; id += 1) await js.publish(names.jobsSubject, new TextEncoder().encode(`{"messageId":${id}}`));
  const registry = createRegistry('dispatch-svc');
  const metrics = startConsumerMetrics({ jsm, consumers: watchedConsumers(names), registry, logger, intervalMs: 20 });
  try {
    await waitFor(async () => (await value(registry, 'notify_jetstream_consumer_pending_messages', names.mailerConsumer)) === 5, {
      timeoutMs: 3_000,
      intervalMs: 25,
      what: 'five pending jobs',
    });
    assert.equal(await value(registry, 'notify_jetstream_consumer_ack_pending_messages', names.mailerConsumer), 0);

    // Two jobs taken and held, as a mailer does while it sends; one of them handed back and taken again.
    const consumer = await js.consumers.get(names.jobsStream, names.mailerConsumer);
    const taken = [await consumer.next(), await consumer.next()];
    taken[0]?.nak();
    // The server must have the nak before the next pull, or that pull is served the next new job instead.
    await nats.flush();
    assert.ok(await consumer.next({ expires: 2_000 }), 'the job handed back is delivered again');
    await waitFor(
      async () =>
        (await value(registry, 'notify_jetstream_consumer_pending_messages', names.mailerConsumer)) === 3 &&
        (await value(registry, 'notify_jetstream_consumer_ack_pending_messages', names.mailerConsumer)) === 2 &&
        (await value(registry, 'notify_jetstream_consumer_redelivered_messages', names.mailerConsumer)) === 1 &&
        (await value(registry, 'notify_jetstream_consumer_delivered_messages', names.mailerConsumer)) === 3,
      { timeoutMs: 3_000, intervalMs: 25, what: 'three pending, two held, one redelivered, three deliveries made' },
    ).catch(async (error: unknown) => {
      const seen = await Promise.all(
        ['pending', 'ack_pending', 'redelivered'].map((kind) => value(registry, `notify_jetstream_consumer_${kind}_messages`, names.mailerConsumer)),
      );
      throw new Error(`${(error as Error).message}; saw pending, held, redelivered = ${seen.join(', ')}`);
    });
  } finally {
    await metrics.stop();
  }
});

test('a consumer that cannot be read keeps its last values and is logged at debug only', async () => {
  const registry = createRegistry('dispatch-svc');
  // The events consumer does not exist in this run: dispatch-svc creates it, as the mailers create theirs.
  const metrics = startConsumerMetrics({ jsm, consumers: watchedConsumers(names), registry, logger, intervalMs: 20 });
  try {
    await waitFor(async () => (await value(registry, 'notify_jetstream_consumer_pending_messages', names.mailerConsumer)) !== undefined, {
      timeoutMs: 3_000,
      intervalMs: 25,
      what: 'the mailer gauges',
    });
    assert.equal(
      await value(registry, 'notify_jetstream_consumer_pending_messages', names.eventsConsumer),
      undefined,
      'no made-up zero for a consumer never read',
    );
    const before = await value(registry, 'notify_jetstream_consumer_ack_pending_messages', names.mailerConsumer);
    assert.ok(before !== undefined && before > 0, `the first test left jobs held (${before})`);

    await jsm.consumers.delete(names.jobsStream, names.mailerConsumer);
    const failures = (): number =>
      logLines.filter((line) => line.consumer === names.mailerConsumer && line.msg?.toString().includes('consumer info unavailable')).length;
    await waitFor(async () => failures() >= 2, { timeoutMs: 3_000, intervalMs: 25, what: 'polls of the deleted consumer to fail' });
    assert.equal(await value(registry, 'notify_jetstream_consumer_ack_pending_messages', names.mailerConsumer), before);
    const levels = new Set(logLines.filter((line) => line.msg?.toString().includes('consumer info unavailable')).map((line) => line.level));
    assert.deepEqual([...levels], ['debug'], 'debug, not warn or error');
  } finally {
    await metrics.stop();
  }
});

test('polling repeats until stop, and no request is made after it', async () => {
  let requests = 0;
  const counting = {
    consumers: {
      info: async (stream: string, consumer: string) => {
        requests += 1;
        return jsm.consumers.info(stream, consumer);
      },
    },
  } as unknown as JetStreamManager;
  const metrics = startConsumerMetrics({ jsm: counting, consumers: watchedConsumers(names), registry: createRegistry('dispatch-svc'), logger, intervalMs: 10 });
  await new Promise((resolve) => setTimeout(resolve, 60));
  await metrics.stop();
  const stoppedAt = requests;
  assert.ok(stoppedAt >= 4, `polled ${stoppedAt / 2} times`);
  await new Promise((resolve) => setTimeout(resolve, 60));
  assert.equal(requests, stoppedAt);
});
