// Runs against a private nats-server on a free port, so the test can stop and restart it without disturbing anyone.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { Counter, createRegistry, ExpiringCache } from '@notify/platform';
import { createPool, type Pool } from '@notify/platform/database';
import { connectNats, type NatsConnection } from '@notify/platform/nats';
import { testEnvironment } from '@notify/test/harness/environment.ts';
import { silentLogger } from '@notify/test/harness/logger.ts';
import { type PrivateNats, startPrivateNats } from '@notify/test/harness/private-nats.ts';
import { waitFor } from '@notify/test/harness/wait.ts';
import { type InvalidationChannel, openInvalidationChannel } from './invalidation.ts';
import type { KeyRecord } from './key-lookup.ts';
import { KeyResolver } from './key-resolver.ts';

const logger = silentLogger('invalidation-test');
const subject = 'tinvalidation_notify.auth.key-revoked';
let privateNats: PrivateNats;
// Never queried: every lookup in these tests is answered by the cache or dropped from it.
let pool: Pool;
// Closed in `after` even when a test fails: a connection left open would keep reconnecting and the run would never end.
const opened: Replica[] = [];

interface Replica {
  nats: NatsConnection;
  cache: ExpiringCache<KeyRecord | null>;
  channel: InvalidationChannel;
  received: Counter<'scope'>;
}

async function replica(): Promise<Replica> {
  const nats = await connectNats(privateNats.url, 'auth-svc-test', logger);
  const cache = new ExpiringCache<KeyRecord | null>({ ttlMs: 60_000, maxEntries: 100 });
  const registers = [createRegistry('auth-svc')];
  const resolver = new KeyResolver({ pool, cache, lookups: new Counter({ name: 'lookups', help: 'test', labelNames: ['result'], registers }) });
  const received = new Counter({ name: 'invalidations', help: 'test', labelNames: ['scope'], registers });
  const channel = await openInvalidationChannel({ nats, subject, resolver, logger, received });
  const opening = { nats, cache, channel, received };
  opened.push(opening);
  return opening;
}

const record = (keyId: number): KeyRecord => ({
  keyId,
  projectId: 1,
  organizationId: 1,
  secretHash: Buffer.alloc(32),
  revoked: false,
  sendRate: '',
  test: false,
  scopes: ['send', 'messages:read'],
  fromDomains: [],
  plan: { planId: 1, name: 'free', suspended: false, monthlyQuota: 0 },
});

function fill(cache: ExpiringCache<KeyRecord | null>, ...prefixes: string[]): void {
  prefixes.forEach((prefix, index) => {
    cache.set(prefix, record(index + 1), cache.ticket());
  });
}

before(async () => {
  pool = createPool(testEnvironment.postgresAdminUrl, { max: 1, applicationName: 'auth-svc-test', logger });
  privateNats = await startPrivateNats();
});

after(async () => {
  for (const side of opened) {
    await side.channel.close().catch(() => undefined);
    await side.nats.close();
  }
  await privateNats.stop();
  await pool.end();
});

test('a revoked prefix is dropped here at once and on the other replica soon after, other keys stay', async () => {
  const [here, there] = [await replica(), await replica()];
  fill(here.cache, 'nk_revoked', 'nk_kept');
  fill(there.cache, 'nk_revoked', 'nk_kept');
  const announced = here.channel.invalidateKey('nk_revoked');
  assert.equal(here.cache.get('nk_revoked'), undefined);
  await announced;
  await waitFor(() => there.cache.get('nk_revoked') === undefined, { timeoutMs: 1_000, intervalMs: 20, what: 'the other replica to drop the revoked prefix' });
  assert.ok(there.cache.get('nk_kept'));
  assert.ok(here.cache.get('nk_kept'));
});

test('an invalidation of every key empties every replica', async () => {
  const [here, there] = [await replica(), await replica()];
  fill(here.cache, 'nk_a', 'nk_b');
  fill(there.cache, 'nk_a', 'nk_b');
  await here.channel.invalidateAll();
  assert.equal(here.cache.size, 0);
  await waitFor(() => there.cache.size === 0, { timeoutMs: 1_000, intervalMs: 20, what: 'the other replica to empty its cache' });
});

test('with NATS down, revocation still takes effect locally and does not hang; after reconnecting the cache starts over', async () => {
  const side = await replica();
  fill(side.cache, 'nk_cached', 'nk_revoked');
  await privateNats.kill('SIGTERM');

  const started = Date.now();
  await side.channel.invalidateKey('nk_revoked');
  assert.ok(Date.now() - started < 1_500, 'the announcement gives up after about a second');
  assert.equal(side.cache.get('nk_revoked'), undefined);
  assert.ok(side.cache.get('nk_cached'), 'still cached while disconnected');

  // Whatever was announced while this replica was away is lost to it: it must forget everything on reconnect.
  await privateNats.start();
  await waitFor(() => side.cache.size === 0, { timeoutMs: 3_000, intervalMs: 20, what: 'the cache to start over after the reconnect' });
  assert.equal((await side.received.get()).values.find((value) => value.labels.scope === 'all')?.value, 1);
});
