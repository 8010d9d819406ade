// The mailer's JetStream key-value buckets (the outcome ledger, the destinations' shared throttle state): created if
// missing, safe from every replica at every start, with their TTL and replica count kept current.
import { Kvm, type KV } from '@nats-io/kv';
import { nanoseconds, type JetStreamClient, type JetStreamManager } from '@notify/platform/nats';

/**
 * `requests`: the client the bucket's reads and writes go through when it is not `js` (the outcome ledger's, with a
 * short request timeout). The bucket is created and kept current through `js`: creating a replicated stream waits for
 * its group to elect a leader, which on a cluster just started can take longer than such a timeout.
 */
export async function openBucket(js: JetStreamClient, jsm: JetStreamManager, bucket: string, options: { ttlMs: number; replicas: number; requests?: JetStreamClient }): Promise<KV> {
  const kv = await new Kvm(js).create(bucket, { history: 1, ttl: options.ttlMs, replicas: options.replicas });
  // Kvm.create leaves an existing bucket as it was; a changed TTL or replica count is applied here.
  const stream = `KV_${bucket}`;
  const { config } = await jsm.streams.info(stream);
  if (config.max_age !== nanoseconds(options.ttlMs) || config.num_replicas !== options.replicas) {
    await jsm.streams.update(stream, { ...config, max_age: nanoseconds(options.ttlMs), num_replicas: options.replicas });
  }
  // Bound without a request of its own, reading the way the created one does (direct gets when the stream allows them).
  return options.requests ? new Kvm(options.requests).open(bucket, { allow_direct: config.allow_direct }) : kv;
}
