// dispatch-svc: templates, messages, idempotency and the outbox in PostgreSQL; jobs out to JetStream, delivery events back in.
import { GrpcServer, runService, ShutdownPriority } from '@notify/platform';
import { createPool } from '@notify/platform/database';
import { connectNats, ensureStreams, jetstream, jetstreamManager, topology } from '@notify/platform/nats';
import { configSpec } from './config.ts';
import { deliveryLimitNames, ensureDeliveryLimitStream, startDeliveryLimitConsumer } from './dead-letters/delivery-limit.ts';
import { ensureEventsConsumer, startEventConsumer } from './events/event-consumer.ts';
import { sweepExpiredIdempotencyRecords } from './idempotency/expiry-sweeper.ts';
import { startConsumerMetrics, watchedConsumers } from './jetstream-metrics.ts';
import { createDispatchMetrics } from './metrics.ts';
import { assertRelayFitsDuplicateWindow, duplicateWindowMs } from './outbox/duplicate-window.ts';
import { createJobPublisher } from './outbox/job-publisher.ts';
import { watchNatsLink } from './outbox/nats-link.ts';
import { relayOutbox } from './outbox/outbox-relay.ts';
import { assertTestFaultAllowed, withTestFault } from './outbox/test-fault.ts';
import { runPeriodically } from './periodic.ts';
import { addDispatchServices } from './services.ts';
import { LiquidSyntax } from '@notify/templating';
import { VariablesSchemas } from './templates/variables-schema.ts';

const idempotencySweepIntervalMs = 60_000;

runService('dispatch-svc', configSpec, async ({ config, logger, registry, lifecycle, addReadinessCheck }) => {
  assertTestFaultAllowed(config.testFault, config.nodeEnv);
  assertRelayFitsDuplicateWindow(config.outboxRelayMinAgeMs, config.outboxRelayIntervalMs);
  const pool = createPool(config.databaseUrl, { max: config.databasePoolSize, applicationName: 'dispatch-svc', logger });
  const nats = await connectNats(config.natsUrl, 'dispatch-svc', logger);
  const names = topology(config.natsPrefix);
  const jsm = await jetstreamManager(nats);
  await ensureStreams(jsm, names, { replicas: config.natsStreamReplicas, duplicateWindowMs });
  await ensureEventsConsumer(jsm, names);
  const limits = deliveryLimitNames(config.natsPrefix, names);
  await ensureDeliveryLimitStream(jsm, limits, config.natsStreamReplicas);
  const js = jetstream(nats);
  const metrics = createDispatchMetrics(registry);
  const link = watchNatsLink(nats);
  // SIGKILL of itself: a test fault (refused outside NODE_ENV=test) must look like a crash, with no shutdown steps.
  const publisher = withTestFault(createJobPublisher({ js, subject: names.jobsSubject, metrics, connected: link.connected }), config.testFault, () =>
    process.kill(process.pid, 'SIGKILL'),
  );

  const server = new GrpcServer({ logger, registry });
  addDispatchServices(server, {
    pool,
    publisher,
    schemas: new VariablesSchemas(),
    liquid: new LiquidSyntax(),
    metrics,
    logger,
    idempotencyTtlMs: config.idempotencyTtlMs,
    internalToken: config.internalToken,
    adminToken: config.adminToken,
  });
  await server.listen(config.grpcPort);

  const relay = runPeriodically(
    'outbox relay',
    config.outboxRelayIntervalMs,
    () => relayOutbox({ pool, publisher, metrics, logger, minAgeMs: config.outboxRelayMinAgeMs }),
    logger,
  );
  const sweeper = runPeriodically('idempotency sweep', idempotencySweepIntervalMs, () => sweepExpiredIdempotencyRecords(pool), logger);
  const consumer = startEventConsumer({ js, names, pool, metrics, logger, maxBatchSize: 128 });
  const deliveryLimits = startDeliveryLimitConsumer({ js, jsm, pool, limits, metrics, logger });
  const consumerMetrics = startConsumerMetrics({ jsm, consumers: watchedConsumers(names), registry, logger });

  addReadinessCheck('database', async () => (await pool.query('SELECT 1')).rowCount === 1);
  addReadinessCheck('nats', async () => (await nats.rtt()) >= 0); // rtt() rejects while disconnected

  lifecycle.onShutdown('gRPC health NOT_SERVING', ShutdownPriority.stopIntake, async () => server.stopServing());
  lifecycle.onShutdown('in-flight calls, outbox relay and consumers', ShutdownPriority.drain, async () => {
    await Promise.all([server.close(Math.floor(config.shutdownTimeoutMs * 0.8)), relay.stop(), sweeper.stop(), consumer.stop(), deliveryLimits.stop(), consumerMetrics.stop()]);
  });
  lifecycle.onShutdown('NATS connection', ShutdownPriority.closeClients, () => nats.drain());
  lifecycle.onShutdown('database pool', ShutdownPriority.closeClients, () => pool.end());
});
