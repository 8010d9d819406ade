// Runs against a private nats-server on a free port, so the test can stop and restart it without disturbing anyone.
// The announcements are published the way auth-svc publishes them: a KeyAnnouncement naming the prefix, or `*` for
// every key, on the key invalidation subject.
import assert from 'node:assert/strict';
import { after, afterEach, before, test } from 'node:test';
import { Counter, createRegistry } from '@notify/platform';
import { connectNats, type NatsConnection, publishMessage } from '@notify/platform/nats';
import { encodeKeyAnnouncement, topology } from '@notify/proto';
import { silentLogger } from '@notify/test/harness/logger.ts';
import { type PrivateNats, startPrivateNats } from '@notify/test/harness/private-nats.ts';
import { waitFor } from '@notify/test/harness/wait.ts';
import { InvalidationListener, type InvalidationTarget } from './authorization-invalidation.ts';

const logger = silentLogger('invalidation-test');
const subject = topology('tgateway_').keyInvalidationSubject;
let nats: PrivateNats;
let publisher: NatsConnection | undefined;
// Closed after each test even when it fails: a connection left open would keep reconnecting and the run would never end.
const listeners: InvalidationListener[] = [];

/** auth-svc's side: one announcement, flushed. */
async function announce(target: string, on = subject): Promise<void> {
  publisher ??= await connectNats(nats.url, 'auth-svc-stand-in', logger);
  publishMessage(publisher, on, encodeKeyAnnouncement(target === '*' ? { everyKey: true } : { keyPrefix: target }));
  await publisher.flush();
}

/** What the listener told the cache, in order. */
function recordingTarget(): InvalidationTarget & { events: string[] } {
  const events: string[] = [];
  return {
    events,
    invalidatePrefix: (prefix) => events.push(`key ${prefix}`),
    invalidateAll: () => events.push('all'),
    pause: () => events.push('pause'),
    resume: () => events.push('resume'),
  };
}

function listen(target: InvalidationTarget, retryMs = 100) {
  const received = new Counter({ name: 'invalidations', help: 'test', labelNames: ['scope'], registers: [createRegistry('gateway-test')] });
  const listener = InvalidationListener.listen({ natsUrl: nats.url, subject, targets: [target], logger, received, retryMs });
  listeners.push(listener);
  const count = async (scope: string) => (await received.get()).values.find((value) => value.labels.scope === scope)?.value ?? 0;
  return { listener, count };
}

before(async () => {
  // Down until the first test starts it: that test begins with NATS unreachable.
  nats = await startPrivateNats();
  await nats.kill('SIGTERM');
});

afterEach(async () => {
  for (const listener of listeners.splice(0)) await listener.close();
});

after(async () => {
  await publisher?.close();
  await nats.stop();
});

test('NATS unreachable at start: nothing is cached, and caching starts once NATS answers, without a restart', async () => {
  const target = recordingTarget();
  const { listener } = listen(target);
  await new Promise((resolve) => setTimeout(resolve, 400)); // several attempts
  assert.equal(listener.live, false);
  assert.deepEqual(target.events, [], 'never resumed: the cache stays paused as it was built');

  await nats.start();
  await waitFor(() => listener.live, { timeoutMs: 3_000, intervalMs: 20, what: 'the listener to go live' });
  assert.deepEqual(target.events, ['resume']);
  await announce('nk_0123456789abcdef');
  await waitFor(() => target.events.length === 2, { timeoutMs: 1_000, intervalMs: 20, what: 'the announcement to arrive' });
  assert.deepEqual(target.events, ['resume', 'key nk_0123456789abcdef']);
});

test("a revoked prefix and `*` reach the cache as auth-svc announces them; another prefix's subject does not", async () => {
  const target = recordingTarget();
  const { listener, count } = listen(target);
  await waitFor(() => listener.live, { timeoutMs: 3_000, intervalMs: 20, what: 'the listener to go live' });
  await announce('nk_aaaaaaaaaaaaaaaa', topology('tother_').keyInvalidationSubject);
  await announce('nk_aaaaaaaaaaaaaaaa');
  await announce('*');
  await waitFor(() => target.events.length === 3, { timeoutMs: 1_000, intervalMs: 20, what: 'both announcements to arrive' });
  assert.deepEqual(target.events, ['resume', 'key nk_aaaaaaaaaaaaaaaa', 'all']);
  assert.deepEqual([await count('key'), await count('all')], [1, 1]);
});

test('NATS lost: the cache is paused at once; reconnected: it starts over, live again', async () => {
  const target = recordingTarget();
  const { listener, count } = listen(target);
  await waitFor(() => listener.live, { timeoutMs: 3_000, intervalMs: 20, what: 'the listener to go live' });
  await publisher?.close();
  publisher = undefined;

  await nats.kill('SIGTERM');
  await waitFor(() => target.events.includes('pause'), { timeoutMs: 3_000, intervalMs: 20, what: 'the cache to be paused' });
  assert.equal(listener.live, false);
  assert.equal(await count('all'), 1, 'counted as an invalidation of everything');

  await nats.start();
  await waitFor(() => listener.live, { timeoutMs: 5_000, intervalMs: 20, what: 'the listener to go live again' });
  assert.deepEqual(target.events, ['resume', 'pause', 'resume']);
  // The subscription was registered again before the cache went live: an announcement now is not lost.
  await announce('nk_bbbbbbbbbbbbbbbb');
  await waitFor(() => target.events.length === 4, { timeoutMs: 1_000, intervalMs: 20, what: 'the announcement after the reconnect to arrive' });
  assert.equal(target.events.at(-1), 'key nk_bbbbbbbbbbbbbbbb');
});

test('closing stops listening and leaves the cache paused', async () => {
  const target = recordingTarget();
  const { listener } = listen(target);
  await waitFor(() => listener.live, { timeoutMs: 3_000, intervalMs: 20, what: 'the listener to go live' });
  await listener.close();
  assert.equal(listener.live, false);
  assert.deepEqual(target.events, ['resume', 'pause']);
  await announce('*');
  await new Promise((resolve) => setTimeout(resolve, 200));
  assert.deepEqual(target.events, ['resume', 'pause'], 'nothing heard after close');
});
