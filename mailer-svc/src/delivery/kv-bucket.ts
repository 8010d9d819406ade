// The mailer's JetStream key-value buckets (the outcome ledger, the destinations' shared throttle state): created if
// missing, safe from every replica at every start, with their TTL and replica count kept current.
import { Kvm, type KV } from '@nats-io/kv';
import { nanoseconds, type JetStreamClient, type JetStreamManager } from '@notify/platform/nats';

export async function openBucket(js: JetStreamClient, jsm: JetStreamManager, bucket: string, options: { ttlMs: number; replicas: number }): Promise<KV> {
  const kv = await new Kvm(js).create(bucket, { history: 1, ttl: options.ttlMs, replicas: options.replicas });
  // Kvm.create leaves an existing bucket as it was; a changed TTL or replica count is applied here.
  const stream = `KV_${bucket}`;
  const { config } = await jsm.streams.info(stream);
  if (config.max_age !== nanoseconds(options.ttlMs) || config.num_replicas !== options.replicas) {
    await jsm.streams.update(stream, { ...config, max_age: nanoseconds(options.ttlMs), num_replicas: options.replicas });
  }
  return kv;
}
