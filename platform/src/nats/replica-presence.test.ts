// Replicas counting each other through a real NATS key-value bucket (run-unique, deleted afterwards), and the even
// split of a limit that their counts give.
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { after, before, test } from 'node:test';
import { testEnvironment } from '@notify/test/harness/environment.ts';
import { silentLogger } from '@notify/test/harness/logger.ts';
import { waitFor } from '@notify/test/harness/wait.ts';
import { connectNats, type JetStreamManager, jetstream, jetstreamManager, type NatsConnection } from './index.ts';
import { type KV, openBucket } from './kv-bucket.ts';
import { evenShare, ReplicaPresence } from './replica-presence.ts';

const logger = silentLogger('presence-test');
const bucket = `T${randomBytes(4).toString('hex')}_REPLICAS`;
let nats: NatsConnection;
let jsm: JetStreamManager;
let kv: KV;

before(async () => {
  nats = await connectNats(testEnvironment.natsUrl, 'presence-test', logger);
  jsm = await jetstreamManager(nats);
  kv = await openBucket(jetstream(nats), jsm, bucket, { ttlMs: 60_000, replicas: 1 });
});

after(async () => {
  await jsm.streams.delete(`KV_${bucket}`).catch(() => false);
  await nats.close();
});

test('the parts of a limit add up to it for any number of replicas, its remainder going to different replicas for different offsets', () => {
  for (const limit of [1, 4, 7, 20]) {
    for (const replicas of [1, 2, 3, 5, 8]) {
      for (const offset of [0, 1, 6, 13]) {
        const parts = Array.from({ length: replicas }, (_, rank) => evenShare(limit, replicas, rank, offset));
        assert.equal(
          parts.reduce((sum, part) => sum + part, 0),
          limit,
          `${limit} among ${replicas} (offset ${offset}): ${parts}`,
        );
        assert.ok(Math.max(...parts) - Math.min(...parts) <= 1, `an even split: ${parts}`);
      }
    }
  }
  assert.deepEqual(
    [0, 1, 2, 3, 4].map((rank) => evenShare(4, 5, rank)),
    [1, 1, 1, 1, 0],
  );
  assert.deepEqual(
    [0, 1, 2, 3, 4].map((rank) => evenShare(4, 5, rank, 2)),
    [1, 0, 1, 1, 1],
    'offset 2: the remainder starts at the replica ranked 2, so the one ranked 1 is left without',
  );
});

test('replicas sharing a bucket count each other and rank themselves alike; one that closes is gone from the count at once', async () => {
  const changes: number[] = [];
  const first = await ReplicaPresence.open(kv, { logger, onChange: () => changes.push(first.replicas.count) });
  const second = await ReplicaPresence.open(kv, { logger });
  const third = await ReplicaPresence.open(kv, { logger });
  const all = [first, second, third];
  await waitFor(() => all.every((presence) => presence.replicas.count === 3), { timeoutMs: 5_000, what: 'three replicas counted by each' });
  assert.deepEqual(all.map((presence) => presence.replicas.rank).sort(), [0, 1, 2], 'each has its own rank');
  await third.close();
  await waitFor(() => [first, second].every((presence) => presence.replicas.count === 2), { timeoutMs: 2_000, what: 'the closed one gone' });
  assert.deepEqual([first, second].map((presence) => presence.replicas.rank).sort(), [0, 1]);
  assert.ok(changes.includes(3) && changes.at(-1) === 2, `onChange told of each count: ${changes}`);
  await Promise.all([first.close(), second.close()]);
});
