// dispatch-svc's background work, started once its gRPC server listens: the outbox and webhook relays, the releaser of
// scheduled messages, the idempotency sweep, the retention purge, the verifier of sending domains, the sealing of
// webhook secrets stored in clear, the event and delivery-limit consumers, the queue, deliverability and retention gauges.
import { type ConfigOf, type Logger, type Registry, runPeriodically } from '@notify/platform';
import type { Pool } from '@notify/platform/database';
import type { JetStreamClient, JetStreamManager, NatsLink } from '@notify/platform/nats';
import type { Topology } from '@notify/proto';
import type { configSpec } from './config.ts';
import { startDataKeyUpkeep } from './data-key-upkeep.ts';
import { startDeliveryLimitConsumer } from './dead-letters/delivery-limit.ts';
import { verifyRequestedDomains } from './domains/domain-verifier.ts';
import { startEventConsumer } from './events/event-consumer.ts';
import { startWebhookRelay, updateUnpublishedWebhookAge } from './events/webhook-relay.ts';
import { sweepExpiredIdempotencyRecords } from './idempotency/expiry-sweeper.ts';
import { startConsumerMetrics, watchedConsumers } from './jetstream-metrics.ts';
import type { DispatchMetrics } from './metrics.ts';
import type { JobPublisher } from './outbox/job-publisher.ts';
import { relayOutbox } from './outbox/outbox-relay.ts';
import { updateDeliverabilityGauges } from './reports/deliverability.ts';
import type { RetentionPurge } from './retention/purge.ts';
import { releaseScheduled, updateScheduledBacklog } from './scheduled/releaser.ts';

export type BackgroundSettings = Pick<
  ConfigOf<typeof configSpec>,
  | 'outboxRelayIntervalMs'
  | 'outboxRelayMinAgeMs'
  | 'scheduleReleaseIntervalMs'
  | 'deliverabilityIntervalMs'
  | 'retentionPurgeIntervalMs'
  | 'dataKey'
  | 'dnsServers'
  | 'domainVerifyIntervalMs'
>;

/** The parts of dispatch-svc (build.ts) the background work runs with. */
export interface BackgroundParts {
  readonly pool: Pool;
  readonly js: JetStreamClient;
  readonly jsm: JetStreamManager;
  readonly names: Topology;
  readonly metrics: DispatchMetrics;
  readonly publisher: JobPublisher;
  readonly link: NatsLink;
  readonly retention: RetentionPurge;
  readonly registry: Registry;
  readonly logger: Logger;
}

export interface Background {
  stop(): Promise<void>;
}

const idempotencySweepIntervalMs = 60_000;
const scheduledBacklogIntervalMs = 5_000;
const webhookGaugeIntervalMs = 15_000;
const retentionGaugesIntervalMs = 60_000;

export function startBackground(settings: BackgroundSettings, parts: BackgroundParts): Background {
  const { pool, js, jsm, names, metrics, publisher, retention, logger } = parts;
  const relay = runPeriodically(
    'outbox relay',
    settings.outboxRelayIntervalMs,
    () => relayOutbox({ pool, publisher, metrics, logger, minAgeMs: settings.outboxRelayMinAgeMs }),
    logger,
  );
  const releaser = runPeriodically(
    'scheduled release',
    settings.scheduleReleaseIntervalMs,
    () => releaseScheduled({ pool, publisher, metrics, logger }),
    logger,
  );
  const backlog = runPeriodically('scheduled backlog gauge', scheduledBacklogIntervalMs, () => updateScheduledBacklog(pool, metrics), logger);
  const unpublished = runPeriodically('webhook relay gauge', webhookGaugeIntervalMs, () => updateUnpublishedWebhookAge(pool, metrics), logger);
  const sweeper = runPeriodically('idempotency sweep', idempotencySweepIntervalMs, () => sweepExpiredIdempotencyRecords(pool), logger);
  const deliverability = runPeriodically('deliverability gauges', settings.deliverabilityIntervalMs, () => updateDeliverabilityGauges(pool, metrics), logger);
  // A purge of a large backlog runs for minutes: shutdown ends it after its batch in progress instead of waiting.
  const purgeAbort = new AbortController();
  const purge = runPeriodically('retention purge', settings.retentionPurgeIntervalMs, () => retention.purge('try', purgeAbort.signal), logger);
  const retentionGauges = runPeriodically('retention gauges', retentionGaugesIntervalMs, () => retention.updateGauges(), logger);
  const domainVerifier = runPeriodically(
    'domain verification',
    settings.domainVerifyIntervalMs,
    () => verifyRequestedDomains({ pool, servers: settings.dnsServers, logger }),
    logger,
  );
  const dataKeyUpkeep = startDataKeyUpkeep({ pool, dataKey: settings.dataKey, logger });
  const webhookRelay = startWebhookRelay({ pool, publisher: js, names, logger, connected: parts.link.connected }, settings.outboxRelayIntervalMs);
  const consumer = startEventConsumer({ js, names, pool, metrics, logger, maxBatchSize: 128, afterCommit: webhookRelay.wake });
  const deliveryLimits = startDeliveryLimitConsumer({ js, jsm, pool, names, metrics, logger });
  const consumerMetrics = startConsumerMetrics({ jsm, consumers: watchedConsumers(names), registry: parts.registry, logger });
  return {
    stop: async () => {
      await consumer.stop();
      purgeAbort.abort();
      await Promise.all([
        purge.stop(),
        retentionGauges.stop(),
        domainVerifier.stop(),
        dataKeyUpkeep.stop(),
        relay.stop(),
        releaser.stop(),
        backlog.stop(),
        unpublished.stop(),
        webhookRelay.stop(),
        sweeper.stop(),
        deliverability.stop(),
        deliveryLimits.stop(),
        consumerMetrics.stop(),
      ]);
    },
  };
}
