// The acked publisher against a real NATS server: a publish resolves with the stream's acknowledgement (a duplicate
// recognised by its Nats-Msg-Id), many at once each get their own, and what the stream refuses, what no stream hears
// and what is never acknowledged reject as they would with `js.publish`.
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { after, before, test } from 'node:test';
import { testEnvironment } from '@notify/test/harness/environment.ts';
import { silentLogger } from '@notify/test/harness/logger.ts';
import { JetStreamApiError } from '@nats-io/jetstream';
import { connectNats, headers as natsHeaders, jetstreamManager, type JetStreamManager, type NatsConnection } from './index.ts';
import { createAckedPublisher, NoStreamError, PublishTimeoutError, type JetStreamPublisher } from './acked-publisher.ts';
import { createInboxRequester, type InboxRequester } from './inbox-requester.ts';

const prefix = `T${randomBytes(4).toString('hex')}_`;
const subjectPrefix = prefix.toLowerCase();
const stream = `${prefix}ACKED`;
const logger = silentLogger('acked-publisher-test');
let nats: NatsConnection;
let jsm: JetStreamManager;
let requester: InboxRequester;
let publisher: JetStreamPublisher;

before(async () => {
  nats = await connectNats(testEnvironment.natsUrl, 'acked-publisher-test', logger);
  jsm = await jetstreamManager(nats);
  await jsm.streams.add({ name: stream, subjects: [`${subjectPrefix}stored.>`], duplicate_window: 60_000_000_000 });
  requester = createInboxRequester(nats);
  publisher = createAckedPublisher(requester);
});

after(async () => {
  requester.close();
  await jsm.streams.delete(stream).catch(() => false);
  await nats.close();
});

const bytes = (text: string): Uint8Array => new TextEncoder().encode(text);

test('a publish resolves once the stream stored the message; the same Nats-Msg-Id again is acknowledged as a duplicate', async () => {
  const subject = `${subjectPrefix}stored.one`;
  const first = await publisher.publish(subject, bytes('one'), { msgID: `${prefix}one` });
  assert.equal(first.stream, stream);
  assert.equal(first.duplicate, false);
  const stored = await jsm.streams.getMessage(stream, { seq: first.seq });
  assert.equal(stored?.string(), 'one');
  assert.equal(stored?.header.get('Nats-Msg-Id'), `${prefix}one`);

  const again = await publisher.publish(subject, bytes('one again'), { msgID: `${prefix}one` });
  assert.deepEqual({ seq: again.seq, duplicate: again.duplicate }, { seq: first.seq, duplicate: true });
});

test('many publishes at once each get their own acknowledgement, and keep the headers given', async () => {
  const count = 300;
  const acks = await Promise.all(
    Array.from({ length: count }, (_, index) => {
      const headers = natsHeaders();
      headers.set('Notify-Index', String(index));
      return publisher.publish(`${subjectPrefix}stored.many`, bytes(`many ${index}`), { msgID: `${prefix}many-${index}`, headers });
    }),
  );
  assert.equal(new Set(acks.map((ack) => ack.seq)).size, count);
  for (const index of [0, 137, count - 1]) {
    const stored = await jsm.streams.getMessage(stream, { seq: acks[index]!.seq });
    assert.equal(stored?.string(), `many ${index}`);
    assert.equal(stored?.header.get('Notify-Index'), String(index));
  }
});

test('what the stream refuses rejects with its API error', async () => {
  const headers = natsHeaders();
  headers.set('Nats-Expected-Stream', `${prefix}ANOTHER`);
  await assert.rejects(publisher.publish(`${subjectPrefix}stored.refused`, bytes('refused'), { msgID: `${prefix}refused`, headers }), (error: unknown) => {
    assert.ok(error instanceof JetStreamApiError, String(error));
    assert.match(error.message, /expected stream/i);
    return true;
  });
});

test('a subject no stream hears rejects with NoStreamError after the tries asked for', async () => {
  const started = Date.now();
  await assert.rejects(publisher.publish(`${subjectPrefix}nowhere`, bytes('lost'), { msgID: `${prefix}nowhere`, retries: 2 }), NoStreamError);
  assert.ok(Date.now() - started >= 250, 'the second try waits before it is made');
});

test('an acknowledgement that never comes rejects with PublishTimeoutError once the timeout has passed, for every try', async () => {
  const subject = `${subjectPrefix}silent`;
  let heard = 0;
  // A subscriber that answers nothing: the publish has a responder, so only its timeout can end it.
  const silent = nats.subscribe(subject, { callback: () => void (heard += 1) });
  await nats.flush();
  const started = Date.now();
  await assert.rejects(publisher.publish(subject, bytes('unheard'), { msgID: `${prefix}silent`, timeout: 200, retries: 2 }), PublishTimeoutError);
  const elapsed = Date.now() - started;
  silent.unsubscribe();
  assert.equal(heard, 2);
  assert.ok(elapsed >= 400 && elapsed < 2_000, `two tries of 200 ms and a pause between them, took ${elapsed} ms`);
});

test('closing its requester rejects the publishes that wait', async () => {
  const own = createInboxRequester(nats);
  const closing = createAckedPublisher(own);
  const silent = nats.subscribe(`${subjectPrefix}closing`, { callback: () => undefined });
  await nats.flush();
  const waiting = closing.publish(`${subjectPrefix}closing`, bytes('waiting'), { msgID: `${prefix}closing` });
  own.close();
  await assert.rejects(waiting, /closed/);
  silent.unsubscribe();
});
