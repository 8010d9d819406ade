// The mailer's record of finished deliveries, kept in a JetStream key-value bucket (the mailer has no database, and
// JetStream is the one store it already depends on). An outcome is written right after the SMTP relay accepted the
// message (or the delivery failed for good) and before the job is acknowledged; it is read before every attempt. So a
// job offered again after its delivery finished (an acknowledgement lost, a replica killed before it acknowledged, a
// job published twice beyond the stream's duplicate window) is settled from the record instead of being mailed again.
// docs/delivery-guarantees.md says which duplicates remain.
import { setTimeout as sleep } from 'node:timers/promises';
import { outcomeTtlMs, type DeliveryEvent, type DeliveryJob, type Topology } from '@notify/proto';
import type { InboxRequester, JetStreamClient, JetStreamManager, JetStreamPublisher } from '@notify/platform/nats';
import { kvOperationHeader, openBucket } from './kv-bucket.ts';

/** How one delivery ended, as its final event recorded it. */
export type FinishedDelivery = Pick<DeliveryEvent, 'attempt' | 'occurredAt' | 'smtpCode' | 'smtpResponse' | 'reason' | 'suppression'> & { state: 'sent' | 'failed' };

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

/**
 * How the ledger's reads and writes travel: as requests of the replica's inbox requester (one subscription for every
 * reply, inbox-requester.ts) with a short timeout, so that a write lost while NATS restarts is retried as soon as the
 * connection is back, not after the default 5 s, which may exceed what is left of the job's ack wait.
 */
export interface LedgerRequests {
  readonly requester: InboxRequester;
  /** Its acked publisher (createAckedPublisher over `requester`). */
  readonly publisher: JetStreamPublisher;
  readonly timeoutMs: number;
}

/** The status of a direct get that found no message on the subject. */
const messageNotFound = 404;
/** A key-value key, as the bucket's own client accepts one. */
const validKey = /^[-/=.\w]+$/;

/**
 * Creates the bucket if it is missing (safe from every replica at every start) and keeps its TTL and replicas current,
 * through `js`, which waits as long as a replicated stream takes to elect its leader. Then a read is a direct get of
 * the key's last message and a write a publish to the key's subject, both through `requests`: what a key-value get and
 * put send, without a request of nats.js's own for each (the reply of a get is read as the bucket reads it: a message
 * deleted or purged is no record).
 */
export async function openOutcomeLedger(
  js: JetStreamClient,
  jsm: JetStreamManager,
  options: { names: Topology; replicas: number; ttlMs?: number; requests: LedgerRequests },
): Promise<OutcomeLedger> {
  const bucket = options.names.outcomesBucket;
  await openBucket(js, jsm, bucket, { ttlMs: options.ttlMs ?? outcomeTtlMs, replicas: options.replicas });
  const { requester, publisher, timeoutMs } = options.requests;
  const subjectOf = (message: LedgerMessage): string => {
    const key = message.celeryTaskId;
    if (key.startsWith('.') || key.endsWith('.') || !validKey.test(key)) throw new Error(`not a key of the outcome ledger: ${JSON.stringify(key)}`);
    return `$KV.${bucket}.${key}`;
  };
  const empty = new Uint8Array(0);
  return {
    async find(message) {
      const reply = await requester.request(`$JS.API.DIRECT.GET.KV_${bucket}.${subjectOf(message)}`, empty, { timeoutMs });
      const code = reply.headers?.code ?? 0;
      if (code === messageNotFound) return undefined;
      if (code !== 0) throw new Error(`the outcome ledger's read failed: ${code} ${reply.headers?.description ?? ''}`.trim());
      const operation = reply.headers?.get(kvOperationHeader);
      return operation === 'DEL' || operation === 'PURGE' ? undefined : parse(reply.string());
    },
    async record(message, outcome, deadlineMs) {
      const subject = subjectOf(message);
      const deadline = Date.now() + deadlineMs;
      const value = new TextEncoder().encode(JSON.stringify(outcome));
      for (;;) {
        try {
          await publisher.publish(subject, value, { timeout: timeoutMs });
          return;
        } catch (error) {
          if (Date.now() + recordRetryMs > deadline) throw error;
          await sleep(recordRetryMs);
        }
      }
    },
  };
}
