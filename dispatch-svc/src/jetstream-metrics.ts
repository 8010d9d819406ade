// JetStream's own count of the messages waiting for Notify's consumers, as gauges: the queue length the mailers and
// the delivery-event consumer have not caught up with, which no counter difference can reconstruct after a restart.
// dispatch-svc polls it because it already holds a JetStream manager and runs once per deployment, not per mailer.
import { Gauge, type Logger, type PeriodicTask, type Registry, runPeriodically } from '@notify/platform';
import type { JetStreamManager } from '@notify/platform/nats';
import type { Topology } from '@notify/proto';

/** Often enough for a 15-minute alert and a dashboard, cheap for the server (one request per consumer). */
export const consumerPollIntervalMs = 5_000;

export interface WatchedConsumer {
  readonly stream: string;
  readonly consumer: string;
}

/** The mailers' jobs consumer and dispatch-svc's delivery-events consumer, under their topology names. */
export function watchedConsumers(names: Topology): WatchedConsumer[] {
  return [
    { stream: names.jobsStream, consumer: names.mailerConsumer },
    { stream: names.eventsStream, consumer: names.eventsConsumer },
    // The webhook senders' deliveries: those waiting a retry delay count as unacknowledged.
    { stream: names.webhooksStream, consumer: names.webhookConsumer },
  ];
}

export interface ConsumerMetricsOptions {
  readonly jsm: JetStreamManager;
  readonly consumers: readonly WatchedConsumer[];
  readonly registry: Registry;
  readonly logger: Logger;
  readonly intervalMs?: number;
}

/** Polls at once, then every `intervalMs`; `stop()` waits for a poll in progress. */
export function startConsumerMetrics(options: ConsumerMetricsOptions): PeriodicTask {
  const gauge = (name: string, help: string): Gauge<'consumer'> => new Gauge({ name, help, labelNames: ['consumer'], registers: [options.registry] });
  const pending = gauge('notify_jetstream_consumer_pending_messages', 'Messages in the stream not yet delivered to the consumer (JetStream num_pending)');
  const ackPending = gauge(
    'notify_jetstream_consumer_ack_pending_messages',
    'Messages delivered to the consumer and not yet acknowledged, retries waiting their backoff included',
  );
  const redelivered = gauge('notify_jetstream_consumer_redelivered_messages', 'Unacknowledged messages the consumer has received more than once');
  const delivered = gauge(
    'notify_jetstream_consumer_delivered_messages',
    "Deliveries JetStream has made to the consumer (its consumer sequence, redeliveries included): it stands still while the consumer's subscribers receive nothing",
  );

  const poll = async (): Promise<void> => {
    await Promise.all(
      options.consumers.map(async ({ stream, consumer }) => {
        try {
          const info = await options.jsm.consumers.info(stream, consumer);
          pending.set({ consumer }, info.num_pending);
          ackPending.set({ consumer }, info.num_ack_pending);
          redelivered.set({ consumer }, info.num_redelivered);
          delivered.set({ consumer }, info.delivered.consumer_seq);
        } catch (error) {
          // NATS down or the consumer not created yet (the mailers create theirs): other alerts say so; the gauges keep
          // their last values rather than dropping to a zero that would read as "no lag".
          options.logger.debug({ err: error, stream, consumer }, 'JetStream consumer info unavailable; its metrics keep their last values');
        }
      }),
    );
  };

  // The first poll runs at once, so the gauges exist from the start; the periodic ones follow it, never overlapping it.
  let stopped = false;
  let periodic: PeriodicTask | undefined;
  const first = poll().then(() => {
    if (!stopped) periodic = runPeriodically('JetStream consumer metrics', options.intervalMs ?? consumerPollIntervalMs, poll, options.logger);
  });
  return {
    async stop() {
      stopped = true;
      await first;
      await periodic?.stop();
    },
  };
}
