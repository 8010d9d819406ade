// JetStream key-value buckets of the services (the mailers' outcome ledger, the replicas' presence and the destinations'
// shared throttle state): created if missing, safe from every replica at every start, with their TTL and replica count
// kept current and direct gets allowed (a read is then answered by a direct get of the key's last message), and
// followed by watches that start again when NATS ends them.
import { setTimeout as sleep } from 'node:timers/promises';
import type { JetStreamClient, JetStreamManager } from '@nats-io/jetstream';
import { type KV, type KvEntry, Kvm } from '@nats-io/kv';
import type { Logger } from '../logger.ts';

const nanoseconds = (ms: number): number => ms * 1_000_000;

export type { KV, KvEntry } from '@nats-io/kv';

export async function openBucket(js: JetStreamClient, jsm: JetStreamManager, bucket: string, options: { ttlMs: number; replicas: number }): Promise<KV> {
  const kv = await new Kvm(js).create(bucket, { history: 1, ttl: options.ttlMs, replicas: options.replicas, allow_direct: true });
  // Kvm.create leaves an existing bucket as it was; a changed TTL or replica count, or direct gets not allowed by an
  // older bucket, are applied here.
  const stream = `KV_${bucket}`;
  const { config } = await jsm.streams.info(stream);
  if (config.max_age !== nanoseconds(options.ttlMs) || config.num_replicas !== options.replicas || config.allow_direct !== true) {
    await jsm.streams.update(stream, { ...config, max_age: nanoseconds(options.ttlMs), num_replicas: options.replicas, allow_direct: true });
  }
  return kv;
}

/** Pause before watching a bucket again after its watch ended. */
const rewatchDelayMs = 1_000;
/** How often a follower checks that its bucket is the one it watches (not one made again since). */
const bucketCheckEveryMs = 2_000;

/** A watch of a bucket's keys that lasts until stopped. */
export interface BucketFollower {
  stop(): Promise<void>;
}

/** When the bucket's stream was made: another value means the bucket was made again (a NATS server that lost its store). */
async function madeAt(kv: KV): Promise<string | undefined> {
  return (await kv.status().catch(() => undefined))?.streamInfo.created;
}

/**
 * Hands every entry of the keys matching `key` (their last values first, then each change) to `apply`, until stopped.
 * A watch that ends or fails (NATS lost for good, its consumer gone) is started again, from the last values; so is one
 * whose bucket was made again (a watch would wait for sequence numbers the new bucket reaches only much later), after
 * `restarted` is told to forget what it knew, revisions included.
 */
export async function followBucket(
  kv: KV,
  key: string,
  apply: (entry: KvEntry) => void,
  options: { logger: Logger; what: string; restarted?: () => void },
): Promise<BucketFollower> {
  let watcher = await kv.watch({ key });
  let watched = await madeAt(kv);
  let stopped = false;
  const check = setInterval(() => {
    void madeAt(kv).then((made) => {
      if (stopped || made === undefined || made === watched) return;
      options.logger.warn({ what: options.what }, 'key-value bucket made again; watching it anew');
      watched = made;
      options.restarted?.();
      watcher.stop();
    });
  }, bucketCheckEveryMs);
  const following = (async () => {
    for (;;) {
      try {
        for await (const entry of watcher) apply(entry);
      } catch (error) {
        if (!stopped) options.logger.warn({ err: error }, `${options.what} watch failed; watching again`);
      }
      if (stopped) return;
      await sleep(rewatchDelayMs);
      if (stopped) return;
      watcher = await kv.watch({ key }).catch(() => watcher);
    }
  })();
  return {
    async stop() {
      stopped = true;
      clearInterval(check);
      watcher.stop();
      await following;
    },
  };
}
