// The mailer's batched event publisher against the machine's NATS (a run-unique events stream, deleted afterwards):
// events reported while two batches wait for their PubAcks go out together as the next one, an event alone goes at once,
// a batch published again is one message in the stream, and a batch that is not stored fails every event in it.
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { after, before, test } from 'node:test';
import { connectNats, ensureStream, type JetStreamPublisher, jetstream, jetstreamManager, type NatsConnection } from '@notify/platform/nats';
import { type DeliveryEvent, readEventsMessage, schemaHeader, streamDeclarations, topology } from '@notify/proto';
import { testEnvironment } from '@notify/test/harness/environment.ts';
import { silentLogger } from '@notify/test/harness/logger.ts';
import { createEventPublisher } from './events.ts';

const names = topology(`te${randomBytes(4).toString('hex')}_`);
let nc: NatsConnection;

before(async () => {
  nc = await connectNats(testEnvironment.natsUrl, 'events-test', silentLogger('events-test'));
  await ensureStream(await jetstreamManager(nc), streamDeclarations(names).events, 1);
});

after(async () => {
  await (await jetstreamManager(nc)).streams.delete(names.eventsStream);
  await nc.close();
});

const event = (messageId: number, state: DeliveryEvent['state'] = 'sending'): DeliveryEvent => ({
  messageId,
  state,
  attempt: 1,
  occurredAt: new Date().toISOString(),
});

/** The real publisher, recording the events of each batch it is given, with every PubAck held until `release`. */
function recording() {
  const batches: number[][] = [];
  const held = Promise.withResolvers<void>();
  const publisher: JetStreamPublisher = {
    async publish(subject, payload, options) {
      const read = readEventsMessage(payload as Uint8Array, options?.headers?.get(schemaHeader));
      assert.ok(read.ok);
      batches.push(read.value.map((each) => (each.ok ? each.value.messageId : 0)));
      const ack = await jetstream(nc).publish(subject, payload, options);
      await held.promise;
      return ack;
    },
  };
  return { batches, publisher, release: () => held.resolve() };
}

const storedMessages = async (): Promise<number> => (await (await jetstreamManager(nc)).streams.info(names.eventsStream)).state.messages;

test('an event alone is published at once, a second beside it; those reported while both wait for their PubAcks go out together as the next', async () => {
  const { batches, publisher, release } = recording();
  const publish = createEventPublisher(publisher, names);
  const before = await storedMessages();
  const first = publish(event(1));
  await new Promise((resolve) => setTimeout(resolve, 50));
  const second = publish(event(2));
  await new Promise((resolve) => setTimeout(resolve, 50));
  assert.deepEqual(batches, [[1], [2]], 'neither waited for company, nor for the other');
  let settled = 0;
  const rest = [3, 4, 5].map((id) =>
    publish(event(id)).then(() => {
      settled += 1;
    }),
  );
  await new Promise((resolve) => setTimeout(resolve, 50));
  assert.deepEqual(batches, [[1], [2]], 'two batches in flight at most');
  assert.equal(settled, 0, 'no event resolves before its batch is stored');
  release();
  await Promise.all([first, second, ...rest]);
  assert.deepEqual(batches, [[1], [2], [3, 4, 5]]);
  assert.equal((await storedMessages()) - before, 3, 'three publishes for five events');
});

test('the same events published again are one message in the stream: the batch id hashes its events', async () => {
  const publish = createEventPublisher(jetstream(nc), names);
  const before = await storedMessages();
  await publish(event(10, 'sent'));
  await publish(event(10, 'sent'));
  await publish(event(11, 'sent'));
  assert.equal((await storedMessages()) - before, 2);
});

test('a batch the stream did not store fails every event in it', async () => {
  let calls = 0;
  const failing: JetStreamPublisher = {
    publish: async () => {
      calls += 1;
      throw new Error('no responders');
    },
  };
  const publish = createEventPublisher(failing, names);
  const results = await Promise.allSettled([publish(event(20)), publish(event(21))]);
  assert.deepEqual(
    results.map((result) => result.status),
    ['rejected', 'rejected'],
  );
  assert.equal(calls, 1, 'the two events were one batch');
});
