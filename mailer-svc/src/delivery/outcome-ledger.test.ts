// The outcome ledger against the machine's NATS (a bucket under a run-unique prefix, deleted afterwards): its bucket is
// created through the service's JetStream client, its reads and writes go through the client given (its short timeout),
// and what they store and find is what the bucket's own key-value client stores and finds.
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { after, before, test } from 'node:test';
import { Kvm } from '@nats-io/kv';
import { createLogger } from '@notify/platform';
import { connectNats, type JetStreamClient, type JetStreamManager, jetstream, jetstreamManager, type NatsConnection } from '@notify/platform/nats';
import { topology } from '@notify/proto';
import { testEnvironment } from '@notify/test/harness/environment.ts';
import { openOutcomeLedger } from './outcome-ledger.ts';

const logger = createLogger('outcome-ledger-test', 'silent');
const names = topology(`tl${randomBytes(4).toString('hex')}_`);
const bucketStream = `KV_${names.outcomesBucket}`;
let nc: NatsConnection;
let jsm: JetStreamManager;

before(async () => {
  nc = await connectNats(testEnvironment.natsUrl, 'outcome-ledger-test', logger);
  jsm = await jetstreamManager(nc);
});

after(async () => {
  await jsm?.streams.delete(bucketStream).catch(() => false);
  await nc?.close();
});

const requestsOn = (connection: NatsConnection, timeoutMs = 2_000): JetStreamClient => jetstream(connection, { timeout: timeoutMs });
const message = { celeryTaskId: '6f1c0a52-3d4e-4b8a-9f10-2a7c5e9b1d34' };
const sent = { state: 'sent', attempt: 1, occurredAt: '2026-11-28T01:00:00.000Z', smtpCode: 250, smtpResponse: '250 2.0.0 queued' } as const;

test('the bucket is created through the service client, so a slow creation is not held to the short timeout of the reads and writes', async () => {
  // Requests on a connection already closed: any of them fails at once.
  const closed = await connectNats(testEnvironment.natsUrl, 'outcome-ledger-test-closed', logger);
  const requests = requestsOn(closed);
  await closed.close();
  const ledger = await openOutcomeLedger(jetstream(nc), jsm, { names, replicas: 1, requests });
  const { config } = await jsm.streams.info(bucketStream);
  assert.equal(config.num_replicas, 1);
  assert.equal(config.allow_direct, true);
  // The reads and writes are the given client's.
  await assert.rejects(ledger.find(message));
  await assert.rejects(ledger.record(message, sent, 0));
});

test('an outcome recorded is found again, and is what the bucket itself holds under the key', async () => {
  const ledger = await openOutcomeLedger(jetstream(nc), jsm, { names, replicas: 1, requests: requestsOn(nc) });
  assert.equal(await ledger.find(message), undefined);
  await ledger.record(message, sent, 2_000);
  assert.deepEqual(await ledger.find(message), sent);
  const kv = await new Kvm(jetstream(nc)).open(names.outcomesBucket);
  assert.deepEqual((await kv.get(message.celeryTaskId))?.json(), sent);

  // A later outcome replaces it; a key deleted or purged in the bucket is no record.
  const failed = { state: 'failed', attempt: 2, occurredAt: '2026-11-28T02:00:00.000Z', reason: '550 5.1.1 no such user' } as const;
  await ledger.record(message, failed, 2_000);
  assert.deepEqual(await ledger.find(message), failed);
  await kv.delete(message.celeryTaskId);
  assert.equal(await ledger.find(message), undefined);
  await ledger.record(message, sent, 2_000);
  assert.deepEqual(await ledger.find(message), sent);
  await kv.purge(message.celeryTaskId);
  assert.equal(await ledger.find(message), undefined);
});

test('a bucket made without direct gets is given them, and its records are still found', async () => {
  const older = topology(`tl${randomBytes(4).toString('hex')}_`);
  const stream = `KV_${older.outcomesBucket}`;
  try {
    const kv = await new Kvm(jetstream(nc)).create(older.outcomesBucket, { history: 1, allow_direct: false });
    await kv.put(message.celeryTaskId, JSON.stringify(sent));
    assert.equal((await jsm.streams.info(stream)).config.allow_direct, false);
    const ledger = await openOutcomeLedger(jetstream(nc), jsm, { names: older, replicas: 1, requests: requestsOn(nc) });
    assert.equal((await jsm.streams.info(stream)).config.allow_direct, true);
    assert.deepEqual(await ledger.find(message), sent);
  } finally {
    await jsm.streams.delete(stream).catch(() => false);
  }
});

test('a write is tried again until its deadline while nothing acknowledges it, then rejects', async () => {
  // A bucket whose stream is gone: the key's subject has no stream, so no write is acknowledged.
  const gone = topology(`tl${randomBytes(4).toString('hex')}_`);
  const ledger = await openOutcomeLedger(jetstream(nc), jsm, { names: gone, replicas: 1, requests: requestsOn(nc, 200) });
  await jsm.streams.delete(`KV_${gone.outcomesBucket}`);
  const started = Date.now();
  await assert.rejects(ledger.record(message, sent, 1_200));
  const elapsed = Date.now() - started;
  assert.ok(elapsed >= 700 && elapsed < 3_000, `tried for about its deadline, took ${elapsed} ms`);
  // A direct get of a stream that is not there is not answered at all.
  await assert.rejects(ledger.find(message), { name: 'TimeoutError' });
});

test("a celery_task_id that is no key of the bucket is neither read nor written, as the bucket's own client refuses it", async () => {
  const ledger = await openOutcomeLedger(jetstream(nc), jsm, { names, replicas: 1, requests: requestsOn(nc) });
  for (const celeryTaskId of ['a b', 'a.*', 'a.>', '.a', 'a.']) {
    await assert.rejects(ledger.find({ celeryTaskId }), /not a key of the outcome ledger/);
    // Refused at once, not tried again until the deadline: no retry can make it a key.
    const started = Date.now();
    await assert.rejects(ledger.record({ celeryTaskId }, sent, 10_000), /not a key of the outcome ledger/);
    assert.ok(Date.now() - started < 1_000);
  }
});
