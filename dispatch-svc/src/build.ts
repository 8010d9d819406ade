// dispatch-svc assembled from its settings and its clients: the streams and consumers it owns, the job publisher, the
// gRPC services' dependencies, and the background work. main.ts runs it; the test harness builds the same thing.
import type { ConfigOf, GrpcServer, Logger, Registry } from '@notify/platform';
import type { Pool } from '@notify/platform/database';
import {
  declareJetStream,
  ensureStream,
  type JetStreamClient,
  type JetStreamManager,
  jetstream,
  jetstreamManager,
  type NatsConnection,
  watchNatsLink,
} from '@notify/platform/nats';
import { streamDeclarations, type Topology, topology } from '@notify/proto';
import { type RenderPool, startRenderPool } from '@notify/templating';
import { type Background, startBackground } from './background.ts';
import type { configSpec } from './config.ts';
import { ensureDeliveryLimitStream } from './dead-letters/delivery-limit.ts';
import { ensureEventsConsumer } from './events/event-consumer.ts';
import { createDispatchMetrics, type DispatchMetrics } from './metrics.ts';
import { jobContentLimit } from './outbox/delivery-job.ts';
import { createJobPublisher, type JobPublisher } from './outbox/job-publisher.ts';
import { withTestFault } from './outbox/test-fault.ts';
import { RetentionPurge } from './retention/purge.ts';
import { addDispatchServices, type ServiceDeps } from './services.ts';
import { VariablesSchemas } from './templates/variables-schema.ts';

export type DispatchSettings = Pick<
  ConfigOf<typeof configSpec>,
  | 'natsPrefix'
  | 'natsStreamReplicas'
  | 'gatewayToken'
  | 'mailerToken'
  | 'bounceToken'
  | 'adminToken'
  | 'idempotencyTtlMs'
  | 'outboxRelayIntervalMs'
  | 'outboxRelayMinAgeMs'
  | 'scheduleReleaseIntervalMs'
  | 'deliverabilityIntervalMs'
  | 'testFault'
  | 'webhookAllowPrivate'
  | 'webhookEndpointsPerProject'
  | 'dataKey'
  | 'renderWorkers'
  | 'messageRetentionHours'
  | 'retentionPurgeIntervalMs'
  | 'retentionPurgeBatchSize'
  | 'retentionPurgePauseMs'
  | 'dnsServers'
  | 'domainVerifyIntervalMs'
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
  /** Starts the background work (background.ts). */
  startBackground(): Background;
}

/** NATS's own max_payload, for a connection whose server has not told its own yet. */
const defaultNatsMaxPayload = 1_048_576;

/** Creates (or updates) the streams and consumers dispatch-svc relies on; safe from every replica at every start. */
function declareStreams(nats: NatsConnection, names: Topology, replicas: number, logger: Logger): Promise<JetStreamManager> {
  return declareJetStream(
    'streams and consumers',
    async () => {
      const jsm = await jetstreamManager(nats);
      const streams = streamDeclarations(names);
      for (const stream of [streams.jobs, streams.events, streams.deadLetters, streams.webhooks]) await ensureStream(jsm, stream, replicas);
      await ensureEventsConsumer(jsm, names);
      await ensureDeliveryLimitStream(jsm, names, replicas);
      return jsm;
    },
    { logger, redeclareOn: nats },
  );
}

/** What the gRPC services run with. */
function serviceDeps(
  settings: DispatchSettings,
  clients: DispatchClients,
  parts: Pick<ServiceDeps, 'publisher' | 'metrics' | 'renderer' | 'retention'>,
): ServiceDeps {
  return {
    ...parts,
    pool: clients.pool,
    logger: clients.logger,
    schemas: new VariablesSchemas(),
    idempotencyTtlMs: settings.idempotencyTtlMs,
    maxJobContentBytes: jobContentLimit(clients.nats.info?.max_payload ?? defaultNatsMaxPayload),
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
}

/** dispatch-svc's parts, its streams and consumers declared first. */
export async function buildDispatch(settings: DispatchSettings, clients: DispatchClients): Promise<Dispatch> {
  const { pool, nats, logger, registry } = clients;
  const names = topology(settings.natsPrefix);
  const jsm = await declareStreams(nats, names, settings.natsStreamReplicas, logger);
  const js = jetstream(nats);
  const metrics = createDispatchMetrics(registry);
  const link = watchNatsLink(nats);
  // A test fault (refused outside NODE_ENV=test) must look like a crash, with no shutdown steps.
  const publisher = withTestFault(
    createJobPublisher({ publisher: js, subject: names.jobsSubject, metrics, connected: link.connected }),
    settings.testFault,
    clients.crash,
  );
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
  const deps = serviceDeps(settings, clients, { publisher, metrics, renderer, retention });
  return {
    names,
    js,
    jsm,
    metrics,
    publisher,
    deps,
    renderer,
    serve: (server) => addDispatchServices(server, deps),
    startBackground: () => startBackground(settings, { pool, js, jsm, names, metrics, publisher, link, retention, registry, logger }),
  };
}
