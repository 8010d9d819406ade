// The mailer's JetStream key-value buckets (the outcome ledger, the destinations' shared throttle state): created if
// missing, safe from every replica at every start, with their TTL and replica count kept current and direct gets
// allowed (a read is then answered by a direct get of the key's last message).
import { type KV, Kvm } from '@nats-io/kv';
import { type JetStreamClient, type JetStreamManager, nanoseconds } from '@notify/platform/nats';

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
