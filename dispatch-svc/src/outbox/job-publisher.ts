// Publishing a delivery job to JetStream. Nats-Msg-Id names the delivery (delivery-job.ts), so the send path and the
// relay may both publish the same job: the stream keeps one within its duplicate window. Each publish is a `send`
// span in the message's trace, and the job's headers carry the context its create span made (the conventions' rule
// when creating and sending are apart), so the mailer's spans are children of the message's creation whoever published.
import { notifyAttributes, OperationalError } from '@notify/platform';
import { type JetStreamPublisher, publishTraced } from '@notify/platform/nats';
import { deliveryJobId, encodeDeliveryJob } from '@notify/proto';
import type { DispatchMetrics, PublishPath } from '../metrics.ts';
import type { OutgoingJob } from './delivery-job.ts';

export interface JobPublisher {
  /** The jobs subject: the destination of the messaging spans around a job. */
  readonly subject: string;
  /** Resolves once JetStream has stored the job (or recognised it as a duplicate); rejects when it did not confirm in time. */
  publish(outgoing: OutgoingJob, path: PublishPath): Promise<void>;
}

/**
 * The wait for a PubAck is short: the send path holds the gateway's call (2 s deadline) while it waits, and a job
 * that was not confirmed is not lost, only left to the relay.
 */
export const publishTimeoutMs = 1_000;

export interface JobPublisherOptions {
  /** The connection's JetStream client. */
  publisher: JetStreamPublisher;
  subject: string;
  metrics: DispatchMetrics;
  /** False while the NATS connection is known to be down: a publish then fails at once instead of waiting out its timeout. */
  connected?: () => boolean;
}

export function createJobPublisher(options: JobPublisherOptions): JobPublisher {
  return {
    subject: options.subject,
    async publish({ job, traceparent }, path) {
      if (options.connected && !options.connected()) throw new OperationalError('NATS is unreachable; the job waits in the outbox');
      const ack = await publishTraced(
        options.publisher,
        options.subject,
        encodeDeliveryJob(job),
        { msgID: deliveryJobId(job), timeout: publishTimeoutMs },
        {
          attributes: { [notifyAttributes.messageId]: job.messageId, 'notify.publish.path': path },
          created: traceparent,
        },
      );
      if (!ack.duplicate) options.metrics.jobsPublished.inc({ path });
    },
  };
}
