// What a delivery job says about its own delivery: where its attempts are numbered from, and when it began. The job
// itself, and how it is read off the wire, are proto/'s (DeliveryJob, readDeliveryJob).
import type { DeliveryJob } from '@notify/proto';

/** Attempts of this delivery are numbered after this: 0 for a first delivery. */
export function attemptBase(job: DeliveryJob): number {
  return job.requeue?.attemptBase ?? 0;
}

/** When this delivery began: the message's acceptance, or its re-queueing. Its age bounds the retries. */
export function deliveryStart(job: DeliveryJob): number {
  return Date.parse(job.requeue?.at ?? job.acceptedAt);
}
