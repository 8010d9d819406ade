// dispatch-svc assembled from its settings and its clients: the streams and consumers it owns, the job publisher, the
// gRPC services' dependencies, and the background work. main.ts runs it; the test harness builds the same thing.
import type { ConfigOf, GrpcServer, Logger, Registry } from '@notify/platform';
import { runPeriodically } from '@notify/platform';
import type { Pool } from '@notify/platform/database';
import { createAckedPublisher, createInboxRequester, declareJetStream, ensureStream, jetstream, jetstreamManager, watchNatsLink, type JetStreamClient, type JetStreamManager, type NatsConnection } from '@notify/platform/nats';
import { streamDeclarations, topology, type Topology } from '@notify/proto';
import { LiquidSyntax, startRenderPool, type RenderPool } from '@notify/templating';
import type { configSpec } from './config.ts';
import { ensureDeliveryLimitStream, startDeliveryLimitConsumer } from './dead-letters/delivery-limit.ts';
import { ensureEventsConsumer, startEventConsumer } from './events/event-consumer.ts';
import { startWebhookRelay } from './events/webhook-relay.ts';
import { sweepExpiredIdempotencyRecords } from './idempotency/expiry-sweeper.ts';
import { startConsumerMetrics, watchedConsumers } from './jetstream-metrics.ts';
import { createDispatchMetrics, type DispatchMetrics } from './metrics.ts';
import { jobContentLimit } from './outbox/delivery-job.ts';
import { createJobPublisher, type JobPublisher } from './outbox/job-publisher.ts';
import { relayOutbox } from './outbox/outbox-relay.ts';
import { withTestFault } from './outbox/test-fault.ts';
import { updateDeliverabilityGauges } from './reports/deliverability.ts';
import { RetentionPurge } from './retention/purge.ts';
import { releaseScheduled, updateScheduledBacklog } from './scheduled/releaser.ts';
import { addDispatchServices, type ServiceDeps } from './services.ts';
import { VariablesSchemas } from './templates/variables-schema.ts';
import { startSecretSealing } from './webhooks/secret-sealing.ts';

export type DispatchSettings = Pick<
  ConfigOf<typeof configSpec>,
  'natsPrefix' | 'natsStreamReplicas' | 'gatewayToken' | 'mailerToken' | 'bounceToken' | 'adminToken' | 'idempotencyTtlMs' | 'outboxRelayIntervalMs' | 'outboxRelayMinAgeMs' | 'scheduleReleaseIntervalMs' | 'deliverabilityIntervalMs' | 'testFault' | 'webhookAllowPrivate' | 'webhookEndpointsPerProject' | 'dataKey' | 'renderWorkers'
  | 'messageRetentionHours' | 'retentionPurgeIntervalMs' | 'retentionPurgeBatchSize' | 'retentionPurgePauseMs'
>;

export interface DispatchClients {
  readonly pool: Pool;
  readonly nats: NatsConnection;
  readonly logger: Logger;
  readonly registry: Registry;
  /** What NOTIFY_TEST_FAULT's points call to die like a crash (the service's `crash`). */
  readonly crash: () => void;
}

export interface Dispatch {
  readonly names: Topology;
  readonly js: JetStreamClient;
  readonly jsm: JetStreamManager;
  readonly metrics: DispatchMetrics;
  readonly publisher: JobPublisher;
  /** What the gRPC services run with. */
  readonly deps: ServiceDeps;
  /** The worker threads previews and subjects render in (deps.renderer); closed after the gRPC server. */
  readonly renderer: RenderPool;
  /** Adds dispatch-svc's gRPC services (services.ts) to `server`. */
  serve(server: GrpcServer): void;
  /** Starts the outbox and webhook relays, the releaser of scheduled messages, the idempotency sweep, the retention purge, the sealing of webhook secrets stored in clear, the event and delivery-limit consumers, the queue, deliverability and retention gauges. */
  startBackground(): { stop(): Promise<void> };
}

/** NATS's own max_payload, for a connection whose server has not told its own yet. */
const defaultNatsMaxPayload = 1_048_576;
const idempotencySweepIntervalMs = 60_000;
const scheduledBacklogIntervalMs = 5_000;
const retentionGaugesIntervalMs = 60_000;

/** Creates (or updates) the streams and consumers dispatch-svc relies on; safe from every replica at every start. */
export async function buildDispatch(settings: DispatchSettings, clients: DispatchClients): Promise<Dispatch> {
  const { pool, nats, logger, registry } = clients;
  const names = topology(settings.natsPrefix);
  const jsm = await declareJetStream(
    'streams and consumers',
    async () => {
      const jsm = await jetstreamManager(nats);
      const streams = streamDeclarations(names);
      for (const stream of [streams.jobs, streams.events, streams.deadLetters, streams.webhooks]) await ensureStream(jsm, stream, settings.natsStreamReplicas);
      await ensureEventsConsumer(jsm, names);
      await ensureDeliveryLimitStream(jsm, names, settings.natsStreamReplicas);
      return jsm;
    },
    { logger },
  );
  const js = jetstream(nats);
  const metrics = createDispatchMetrics(registry);
  const link = watchNatsLink(nats);
  const acked = createAckedPublisher(createInboxRequester(nats));
  // A test fault (refused outside NODE_ENV=test) must look like a crash, with no shutdown steps.
  const publisher = withTestFault(createJobPublisher({ publisher: acked, subject: names.jobsSubject, metrics, connected: link.connected }), settings.testFault, clients.crash);
  // The panel's previews render tenant templates: in worker threads, so a hostile one never holds Send or any other call.
  const renderer = await startRenderPool({
    workers: settings.renderWorkers,
    onWorkerReplaced: (event) => logger.warn({ reason: event.reason, template: event.template, detail: event.detail }, 'render worker replaced'),
  });
  const retention = new RetentionPurge({
    pool,
    metrics,
    logger,
    defaultRetentionHours: settings.messageRetentionHours,
    batchSize: settings.retentionPurgeBatchSize,
    pauseMs: settings.retentionPurgePauseMs,
  });
  const deps: ServiceDeps = {
    pool,
    retention,
    publisher,
    schemas: new VariablesSchemas(),
    liquid: new LiquidSyntax(),
    renderer,
    metrics,
    logger,
    idempotencyTtlMs: settings.idempotencyTtlMs,
    maxJobContentBytes: jobContentLimit(nats.info?.max_payload ?? defaultNatsMaxPayload),
    callers: {
      gateway: { name: 'gateway', token: settings.gatewayToken },
      mailer: { name: 'mailer', token: settings.mailerToken },
      bounce: { name: 'bounce', token: settings.bounceToken },
      admin: { name: 'admin', token: settings.adminToken },
    },
    webhookAllowPrivate: settings.webhookAllowPrivate,
    webhookEndpointsPerProject: settings.webhookEndpointsPerProject,
    dataKey: settings.dataKey,
  };
  return {
    names,
    js,
    jsm,
    metrics,
    publisher,
    deps,
    renderer,
    serve: (server) => addDispatchServices(server, deps),
    startBackground() {
      const relay = runPeriodically(
        'outbox relay',
        settings.outboxRelayIntervalMs,
        () => relayOutbox({ pool, publisher, metrics, logger, minAgeMs: settings.outboxRelayMinAgeMs }),
        logger,
      );
      const releaser = runPeriodically('scheduled release', settings.scheduleReleaseIntervalMs, () => releaseScheduled({ pool, publisher, metrics, logger }), logger);
      const backlog = runPeriodically('scheduled backlog gauge', scheduledBacklogIntervalMs, () => updateScheduledBacklog(pool, metrics), logger);
      const sweeper = runPeriodically('idempotency sweep', idempotencySweepIntervalMs, () => sweepExpiredIdempotencyRecords(pool), logger);
      const deliverability = runPeriodically('deliverability gauges', settings.deliverabilityIntervalMs, () => updateDeliverabilityGauges(pool, metrics), logger);
      // A purge of a large backlog runs for minutes: shutdown ends it after its batch in progress instead of waiting.
      const purgeAbort = new AbortController();
      const purge = runPeriodically('retention purge', settings.retentionPurgeIntervalMs, () => retention.purge('try', purgeAbort.signal), logger);
      const retentionGauges = runPeriodically('retention gauges', retentionGaugesIntervalMs, () => retention.updateGauges(), logger);
      const secretSealing = startSecretSealing({ pool, dataKey: settings.dataKey, logger });
      const webhookRelay = startWebhookRelay({ pool, publisher: acked, names, logger, connected: link.connected }, settings.outboxRelayIntervalMs);
      const consumer = startEventConsumer({ js, names, pool, metrics, logger, maxBatchSize: 128, afterCommit: webhookRelay.wake });
      const deliveryLimits = startDeliveryLimitConsumer({ js, jsm, pool, names, metrics, logger });
      const consumerMetrics = startConsumerMetrics({ jsm, consumers: watchedConsumers(names), registry, logger });
      return {
        stop: async () => {
          await consumer.stop();
          purgeAbort.abort();
          await Promise.all([purge.stop(), retentionGauges.stop(), secretSealing.stop(), relay.stop(), releaser.stop(), backlog.stop(), webhookRelay.stop(), sweeper.stop(), deliverability.stop(), deliveryLimits.stop(), consumerMetrics.stop()]);
        },
      };
    },
  };
}
