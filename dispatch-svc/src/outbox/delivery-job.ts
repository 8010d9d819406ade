// The job dispatch-svc publishes for one delivery of a message, and the Nats-Msg-Id JetStream de-duplicates it by.
import type { DeliveryJob } from '@notify/proto';

/**
 * Present on the job of a re-queued dead letter (dead-letters/requeue.ts): its attempts are numbered after
 * `attemptBase`, the last attempt of the earlier deliveries, so their late events can never pass for the new ones, and
 * its age (which bounds the mailer's retries) counts from `at`. Read by mailer-svc/src/delivery/job.ts; it belongs in
 * proto/src/messaging.ts beside DeliveryJob.
 */
export interface Requeue {
  attemptBase: number;
  at: string;
}

export type QueuedJob = DeliveryJob & { requeue?: Requeue };

/**
 * The message id for a first delivery; `<id>:requeue:<attemptBase>` for a re-queued one. The send path and the outbox
 * relay publishing one delivery twice get one job, while a re-queued delivery is never mistaken for the first.
 */
export function jobMsgId(job: Pick<QueuedJob, 'messageId' | 'requeue'>): string {
  return job.requeue ? `${job.messageId}:requeue:${job.requeue.attemptBase}` : String(job.messageId);
}

/**
 * A job on its way to JetStream, with the `traceparent` of the span that created it (stored on the message row): the
 * publish continues that trace, and the job's headers carry it to the mailer. Empty for a message accepted before
 * traces were carried past the queue.
 */
export interface OutgoingJob {
  readonly job: QueuedJob;
  readonly traceparent: string;
}
