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

/**
 * Room a job's headers and its fields other than the data and the template's texts take, at most: ids, recipient,
 * times, the template's slug, Nats-Msg-Id, the trace context and the schema header come to well under this.
 */
const jobEnvelopeBytes = 4_096;

/**
 * The largest data and template texts a job may carry, in bytes, for a NATS server that takes messages of up to
 * `serverMaxPayload` bytes (its `max_payload`, 1 MiB by default). A job over it could never be published: it would
 * wait in the outbox for good, so such a message is refused when it is sent (413), not accepted.
 */
export function jobContentLimit(serverMaxPayload: number): number {
  return serverMaxPayload - jobEnvelopeBytes;
}

/** What a message's data (as the gateway serialized it) and its template's texts weigh in its job, in bytes. */
export function jobContentBytes(dataJson: string, template: { readonly subject: string; readonly html: string; readonly text: string }): number {
  return Buffer.byteLength(dataJson) + Buffer.byteLength(template.subject) + Buffer.byteLength(template.html) + Buffer.byteLength(template.text);
}
