// A delivery job on its way to JetStream. The job itself, its Nats-Msg-Id and its encoding are proto/'s
// (DeliveryJob, deliveryJobId, encodeDeliveryJob); the outbox row keeps the job as JSON of the same shape.
import type { DeliveryJob } from '@notify/proto';

/**
 * A job with the `traceparent` of the span that created it (stored on the message row): the publish continues that
 * trace, and the job's headers carry it to the mailer. Empty for a message accepted before traces were carried past
 * the queue.
 */
export interface OutgoingJob {
  readonly job: DeliveryJob;
  readonly traceparent: string;
}
