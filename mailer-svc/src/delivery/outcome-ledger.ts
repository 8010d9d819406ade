// The mailer's record of finished deliveries, kept in a JetStream key-value bucket (the mailer has no database, and
// JetStream is the one store it already depends on). An outcome is written right after the SMTP relay accepted the
// message (or the delivery failed for good) and before the job is acknowledged; it is read before every attempt. So a
// job offered again after its delivery finished (an acknowledgement lost, a replica killed before it acknowledged, a
// job published twice beyond the stream's duplicate window) is settled from the record instead of being mailed again.
// docs/delivery-guarantees.md says which duplicates remain.
import { setTimeout as sleep } from 'node:timers/promises';
import { Kvm } from '@nats-io/kv';
import { type JetStreamClient, type JetStreamManager, openBucket } from '@notify/platform/nats';
import { type DeliveryEvent, type DeliveryJob, outcomeTtlMs, type Topology } from '@notify/proto';

/** How one delivery ended, as its final event recorded it. */
export type FinishedDelivery = Pick<DeliveryEvent, 'attempt' | 'occurredAt' | 'smtpCode' | 'smtpResponse' | 'reason' | 'suppression'> & {
  state: 'sent' | 'failed';
};

/**
 * Which message a record is about: its celery_task_id, a UUID of its own. Not its id, which a database restored from a
 * backup (or dropped and created again, as `npm start` may) hands out again: a new message would then be taken for an
 * old one already sent, and never mailed.
 */
export type LedgerMessage = Pick<DeliveryJob, 'celeryTaskId'>;

export interface OutcomeLedger {
  /** The recorded outcome of the message's latest finished delivery, if any. */
  find(message: LedgerMessage): Promise<FinishedDelivery | undefined>;
  /** Records an outcome, retrying while NATS is unreachable until `deadlineMs` has passed; then rejects. */
  record(message: LedgerMessage, outcome: FinishedDelivery, deadlineMs: number): Promise<void>;
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

/** A key-value key, as the bucket's own client accepts one. */
const validKey = /^[-/=.\w]+$/;

/**
 * Creates the bucket if it is missing (safe from every replica at every start) and keeps its TTL and replicas current,
 * through `js`, which waits as long as a replicated stream takes to elect its leader. Its reads and writes go through
 * `requests`, a client with a short request timeout (a write lost while NATS restarts is tried again as soon as the
 * connection is back).
 */
export async function openOutcomeLedger(
  js: JetStreamClient,
  jsm: JetStreamManager,
  options: { names: Topology; replicas: number; ttlMs?: number; requests: JetStreamClient },
): Promise<OutcomeLedger> {
  const bucket = options.names.outcomesBucket;
  await openBucket(js, jsm, bucket, { ttlMs: options.ttlMs ?? outcomeTtlMs, replicas: options.replicas });
  // Bound without a request of its own; the bucket allows direct gets (kv-bucket.ts), so a read is one.
  const kv = await new Kvm(options.requests).open(bucket, { allow_direct: true });
  // Checked before a write's first try, which no retry could make a key (the bucket's client refuses it too).
  const key = (message: LedgerMessage): string => {
    const key = message.celeryTaskId;
    if (key.startsWith('.') || key.endsWith('.') || !validKey.test(key)) throw new Error(`not a key of the outcome ledger: ${JSON.stringify(key)}`);
    return key;
  };
  return {
    async find(message) {
      const entry = await kv.get(key(message));
      return entry && entry.operation === 'PUT' ? parse(entry.string()) : undefined;
    },
    async record(message, outcome, deadlineMs) {
      const deadline = Date.now() + deadlineMs;
      const name = key(message);
      const value = JSON.stringify(outcome);
      for (;;) {
        try {
          await kv.put(name, value);
          return;
        } catch (error) {
          if (Date.now() + recordRetryMs > deadline) throw error;
          await sleep(recordRetryMs);
        }
      }
    },
  };
}
