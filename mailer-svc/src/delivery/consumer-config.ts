// The durable pull consumer every mailer replica shares on the jobs stream.
import { nanoseconds } from '@notify/platform/nats';
import type { Topology } from '@notify/proto';

export interface ConsumerSettings {
  maxAttempts: number;
  ackWaitMs: number;
}

/**
 * Deliveries the server allows beyond the mailer's own attempt limit. The mailer terms a job when its attempts are used
 * up; the headroom covers deliveries that were no attempt (a replica stopping, an event that could not be recorded).
 */
export const deliveryHeadroom = 5;

/**
 * Jobs out at once across all replicas. It is not concurrency x replicas: a job waiting out a retry delay (a delayed
 * nak) stays pending on the server, so a limit that small would let a greylisting domain or a relay outage stop every
 * delivery. Each replica bounds what it holds itself by asking only for its free slots (see mailer.ts).
 */
export const maxAckPending = 100_000;

export function mailerConsumerConfig(names: Topology, settings: ConsumerSettings) {
  return {
    durable_name: names.mailerConsumer,
    filter_subject: names.jobsSubject,
    ack_wait: nanoseconds(settings.ackWaitMs),
    max_ack_pending: maxAckPending,
    max_deliver: settings.maxAttempts + deliveryHeadroom,
  };
}
