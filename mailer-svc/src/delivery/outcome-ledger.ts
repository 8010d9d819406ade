// The mailer's record of finished deliveries, kept in a JetStream key-value bucket (the mailer has no database, and
// JetStream is the one store it already depends on). An outcome is written right after the SMTP relay accepted the
// message (or the delivery failed for good) and before the job is acknowledged; it is read before every attempt. So a
// job offered again after its delivery finished (an acknowledgement lost, a replica killed before it acknowledged, a
// job published twice beyond the stream's duplicate window) is settled from the record instead of being mailed again.
// docs/delivery-guarantees.md says which duplicates remain.
import { setTimeout as sleep } from 'node:timers/promises';
import { Kvm, type KV } from '@nats-io/kv';
import { outcomeTtlMs, type DeliveryEvent, type Topology } from '@notify/proto';
import { nanoseconds, type JetStreamClient, type JetStreamManager } from '@notify/platform/nats';

/** How one delivery ended, as its final event recorded it. */
export type FinishedDelivery = Pick<DeliveryEvent, 'attempt' | 'occurredAt' | 'smtpCode' | 'smtpResponse' | 'reason' | 'suppression'> & { state: 'sent' | 'failed' };

export interface OutcomeLedger {
  /** The recorded outcome of the message's latest finished delivery, if any. */
  find(messageId: number): Promise<FinishedDelivery | undefined>;
  /** Records an outcome, retrying while NATS is unreachable until `deadlineMs` has passed; then rejects. */
  record(messageId: number, outcome: FinishedDelivery, deadlineMs: number): Promise<void>;
}

/** Pause between two attempts to record an outcome while NATS is unreachable. */
const recordRetryMs = 500;

function parse(value: string): FinishedDelivery | undefined {
  try {
    const outcome = JSON.parse(value) as Partial<FinishedDelivery> | null;
    if ((outcome?.state === 'sent' || outcome?.state === 'failed') && Number.isSafeInteger(outcome.attempt) && typeof outcome.occurredAt === 'string') {
      return outcome as FinishedDelivery;
    }
  } catch {
    // An unreadable record protects nothing; the delivery proceeds as if there were none.
  }
  return undefined;
}

/** Creates the bucket if it is missing (safe from every replica at every start) and keeps its TTL and replicas current. */
export async function openOutcomeLedger(js: JetStreamClient, jsm: JetStreamManager, options: { names: Topology; replicas: number; ttlMs?: number }): Promise<OutcomeLedger> {
  const bucket = options.names.outcomesBucket;
  const ttlMs = options.ttlMs ?? outcomeTtlMs;
  const kv: KV = await new Kvm(js).create(bucket, { history: 1, ttl: ttlMs, replicas: options.replicas });
  // Kvm.create leaves an existing bucket as it was; a changed TTL or replica count is applied here.
  const stream = `KV_${bucket}`;
  const { config } = await jsm.streams.info(stream);
  if (config.max_age !== nanoseconds(ttlMs) || config.num_replicas !== options.replicas) {
    await jsm.streams.update(stream, { ...config, max_age: nanoseconds(ttlMs), num_replicas: options.replicas });
  }
  const key = (messageId: number): string => String(messageId);
  return {
    async find(messageId) {
      const entry = await kv.get(key(messageId));
      return entry && entry.operation === 'PUT' ? parse(entry.string()) : undefined;
    },
    async record(messageId, outcome, deadlineMs) {
      const deadline = Date.now() + deadlineMs;
      for (;;) {
        try {
          await kv.put(key(messageId), JSON.stringify(outcome));
          return;
        } catch (error) {
          if (Date.now() + recordRetryMs > deadline) throw error;
          await sleep(recordRetryMs);
        }
      }
    },
  };
}
