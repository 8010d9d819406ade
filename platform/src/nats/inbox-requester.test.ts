// The inbox requester against a real NATS server: each reply settles its own request, many at once; a status reply (no
// responders) is handed over as it came; a request nobody answers times out; closing it, or its connection, rejects
// what waits, and a closed connection rejects at once.
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { after, before, test } from 'node:test';
import { testEnvironment } from '@notify/test/harness/environment.ts';
import { silentLogger } from '@notify/test/harness/logger.ts';
import { connectNats, type NatsConnection } from './index.ts';
import { createInboxRequester, noRespondersStatus, RequestTimeoutError, type InboxRequester } from './inbox-requester.ts';

const subjectPrefix = `t${randomBytes(4).toString('hex')}.requests`;
const logger = silentLogger('inbox-requester-test');
let nats: NatsConnection;
let requester: InboxRequester;

before(async () => {
  nats = await connectNats(testEnvironment.natsUrl, 'inbox-requester-test', logger);
  requester = createInboxRequester(nats);
});

after(async () => {
  requester.close();
  await nats.close();
});

const bytes = (text: string): Uint8Array => new TextEncoder().encode(text);

test('each reply settles its own request, with many waiting at once and answered out of order', async () => {
  const subject = `${subjectPrefix}.echo`;
  const held: { reply: string; data: string }[] = [];
  const count = 200;
  // An echo service that answers the requests in reverse order of arrival, once it has them all.
  const service = nats.subscribe(subject, {
    callback: (_error, msg) => {
      held.push({ reply: msg.reply ?? '', data: msg.string() });
      if (held.length === count) for (const { reply, data } of held.reverse()) nats.publish(reply, bytes(`echo ${data}`));
    },
  });
  await nats.flush();
  const replies = await Promise.all(Array.from({ length: count }, (_, index) => requester.request(subject, bytes(String(index)), { timeoutMs: 5_000 })));
  service.unsubscribe();
  assert.deepEqual(
    replies.map((reply) => reply.string()),
    Array.from({ length: count }, (_, index) => `echo ${index}`),
  );
});

test('a request nobody subscribes to is answered by the server with its no-responders status', async () => {
  const reply = await requester.request(`${subjectPrefix}.nobody`, bytes('anyone?'), { timeoutMs: 5_000 });
  assert.equal(reply.headers?.code, noRespondersStatus);
});

test('a request whose subscriber never answers rejects with RequestTimeoutError once its timeout has passed', async () => {
  const subject = `${subjectPrefix}.silent`;
  const silent = nats.subscribe(subject, { callback: () => undefined });
  await nats.flush();
  const started = Date.now();
  await assert.rejects(requester.request(subject, bytes('unheard'), { timeoutMs: 200 }), RequestTimeoutError);
  const elapsed = Date.now() - started;
  silent.unsubscribe();
  assert.ok(elapsed >= 200 && elapsed < 1_500, `rejected after its 200 ms, took ${elapsed} ms`);
});

test('closing the requester or its connection rejects what waits; a closed connection rejects at once', async () => {
  const own = await connectNats(testEnvironment.natsUrl, 'inbox-requester-close-test', logger);
  const subject = `${subjectPrefix}.closing`;
  // A subscriber that answers nothing (closed with its connection).
  own.subscribe(subject, { callback: () => undefined });
  await own.flush();

  const closing = createInboxRequester(own);
  const waiting = closing.request(subject, bytes('waiting'), { timeoutMs: 5_000 });
  closing.close();
  await assert.rejects(waiting, /closed/);

  const afterClose = createInboxRequester(own);
  // Waiting when the connection closes: rejected then, not at its 5 s timeout.
  const started = Date.now();
  const cut = afterClose.request(subject, bytes('cut'), { timeoutMs: 5_000 });
  await own.close();
  await assert.rejects(cut, /closed/);
  assert.ok(Date.now() - started < 2_000, 'rejected when the connection closed');
  await assert.rejects(afterClose.request(subject, bytes('late'), { timeoutMs: 5_000 }), /closed/);
});
