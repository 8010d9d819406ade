// The outcome ledger against the machine's NATS (a bucket under a run-unique prefix, deleted afterwards): its bucket is
// created through the service's JetStream client, its reads and writes go through the client given for them.
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { after, before, test } from 'node:test';
import { createLogger } from '@notify/platform';
import { connectNats, jetstream, jetstreamManager, type JetStreamManager, type NatsConnection } from '@notify/platform/nats';
import { topology } from '@notify/proto';
import { testEnvironment } from '@notify/test/harness/environment.ts';
import { openOutcomeLedger } from './outcome-ledger.ts';

const logger = createLogger('outcome-ledger-test', 'silent');
const names = topology(`tl${randomBytes(4).toString('hex')}_`);
let nc: NatsConnection;
let jsm: JetStreamManager;

before(async () => {
  nc = await connectNats(testEnvironment.natsUrl, 'outcome-ledger-test', logger);
  jsm = await jetstreamManager(nc);
});

after(async () => {
  await jsm?.streams.delete(`KV_${names.outcomesBucket}`).catch(() => false);
  await nc?.close();
});

const message = { celeryTaskId: '6f1c0a52-3d4e-4b8a-9f10-2a7c5e9b1d34' };
const sent = { state: 'sent', attempt: 1, occurredAt: '2026-11-28T01:00:00.000Z', smtpCode: 250, smtpResponse: '250 2.0.0 queued' } as const;

test('the bucket is created through the service client, so a slow creation is not held to the short timeout of the reads and writes', async () => {
  // A client on a connection already closed: any request through it fails at once.
  const closed = await connectNats(testEnvironment.natsUrl, 'outcome-ledger-test-closed', logger);
  await closed.close();
  const ledger = await openOutcomeLedger(jetstream(nc), jsm, { names, replicas: 1, requests: jetstream(closed) });
  assert.equal((await jsm.streams.info(`KV_${names.outcomesBucket}`)).config.num_replicas, 1);
  // The reads and writes are the given client's.
  await assert.rejects(ledger.find(message));
  await assert.rejects(ledger.record(message, sent, 0));
});

test('an outcome recorded through the requests client is found again, as the bucket reads it (direct gets when allowed)', async () => {
  const ledger = await openOutcomeLedger(jetstream(nc), jsm, { names, replicas: 1, requests: jetstream(nc, { timeout: 2_000 }) });
  assert.equal(await ledger.find(message), undefined);
  await ledger.record(message, sent, 2_000);
  assert.deepEqual(await ledger.find(message), sent);
});
