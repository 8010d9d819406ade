// Publishing a delivery job to JetStream. Nats-Msg-Id is the message id, so the send path and the relay may both publish
// the same job: the stream keeps one within its duplicate window.
import type { DeliveryJob } from '@notify/proto';
import type { JetStreamClient } from '@notify/platform/nats';
import type { DispatchMetrics, PublishPath } from '../metrics.ts';

export interface JobPublisher {
  /** Resolves once JetStream has stored the job (or recognised it as a duplicate); rejects when it did not confirm in time. */
  publish(job: DeliveryJob, path: PublishPath): Promise<void>;
}

/**
 * The wait for a PubAck is short: the send path holds the gateway's call (2 s deadline) while it waits, and a job
 * that was not confirmed is not lost, only left to the relay.
 */
const publishTimeoutMs = 1_000;

export function createJobPublisher(options: { js: JetStreamClient; subject: string; metrics: DispatchMetrics }): JobPublisher {
  const encoder = new TextEncoder();
  return {
    async publish(job, path) {
      const ack = await options.js.publish(options.subject, encoder.encode(JSON.stringify(job)), {
        msgID: String(job.messageId),
        timeout: publishTimeoutMs,
      });
      if (!ack.duplicate) options.metrics.jobsPublished.inc({ path });
    },
  };
}
