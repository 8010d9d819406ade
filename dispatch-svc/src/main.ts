// dispatch-svc: templates, messages, idempotency and the outbox in PostgreSQL; jobs out to JetStream, delivery events back in.
import { GrpcServer, runService, ShutdownPriority, serverCredentials } from '@notify/platform';
import { createPool, databaseReachable } from '@notify/platform/database';
import { connectNats, natsReachable } from '@notify/platform/nats';
import { buildDispatch } from './build.ts';
import { configSpec } from './config.ts';
import { assertRelayFitsDuplicateWindow } from './outbox/duplicate-window.ts';
import { assertTestFaultAllowed } from './outbox/test-fault.ts';

runService('dispatch-svc', configSpec, async ({ config, logger, registry, lifecycle, addReadinessCheck, crash }) => {
  assertTestFaultAllowed(config.testFault, config.nodeEnv);
  assertRelayFitsDuplicateWindow(config.outboxRelayMinAgeMs, config.outboxRelayIntervalMs);
  const pool = createPool(config.databaseUrl, { max: config.databasePoolSize, applicationName: 'dispatch-svc', logger });
  const nats = await connectNats(config.natsUrl, 'dispatch-svc', logger, config);
  const dispatch = await buildDispatch(config, { pool, nats, logger, registry, crash });

  const server = new GrpcServer({ logger, registry, credentials: serverCredentials(config, { logger }) });
  dispatch.serve(server);
  await server.listen(config.grpcPort);
  const background = dispatch.startBackground();

  addReadinessCheck('database', () => databaseReachable(pool));
  addReadinessCheck('nats', () => natsReachable(nats));

  lifecycle.onShutdown('gRPC health NOT_SERVING', ShutdownPriority.stopIntake, async () => server.stopServing());
  lifecycle.onShutdown('in-flight calls, outbox relay and consumers', ShutdownPriority.drain, async () => {
    await Promise.all([server.close(Math.floor(config.shutdownTimeoutMs * 0.8)), background.stop()]);
  });
  lifecycle.onShutdown('render workers', ShutdownPriority.closeClients, () => dispatch.renderer.close());
  lifecycle.onShutdown('NATS connection', ShutdownPriority.closeClients, () => nats.drain());
  lifecycle.onShutdown('database pool', ShutdownPriority.closeClients, () => pool.end());
});
