// auth-svc: answers "who is calling and may they send" for the gateway, and manages plans, organizations,
// projects and API keys for notifyctl.
import { degradable, GrpcServer, runService, ShutdownPriority, serverCredentials } from '@notify/platform';
import { createPool, databaseReachable } from '@notify/platform/database';
import { connectNats, natsReachable } from '@notify/platform/nats';
import { authProto, topology } from '@notify/proto';
import { createAuthService } from './auth-service.ts';
import { configSpec } from './config.ts';

runService('auth-svc', configSpec, async ({ config, logger, registry, lifecycle, addReadinessCheck }) => {
  const pool = createPool(config.databaseUrl, { max: config.databasePoolSize, applicationName: 'auth-svc', logger });
  const nats = await connectNats(config.natsUrl, 'auth-svc', logger, config);
  const service = await createAuthService({
    pool,
    nats,
    invalidationSubject: topology(config.natsPrefix).keyInvalidationSubject,
    cacheTtlMs: config.cacheTtlMs,
    logger,
    registry,
  });

  const server = new GrpcServer({ logger, registry, credentials: serverCredentials(config, { logger }) });
  const gateway = { name: 'gateway', token: config.gatewayToken };
  server.add(authProto.AuthService.service, service.authorize, [gateway]);
  server.add(authProto.AuthAdminService.service, service.admin, [{ name: 'admin', token: config.adminToken }]);
  server.add(authProto.PanelAuthService.service, service.panel, [gateway]);
  await server.listen(config.grpcPort);

  addReadinessCheck('database', () => databaseReachable(pool));
  // Only key announcements travel on NATS (other replicas' caches then expire on their own): reported, never a reason
  // to leave rotation.
  addReadinessCheck(
    'nats',
    degradable(() => natsReachable(nats)),
  );

  lifecycle.onShutdown('gRPC health NOT_SERVING', ShutdownPriority.stopIntake, async () => server.stopServing());
  // Calls still running near the step's own deadline are cancelled, so the later steps still get their turn.
  lifecycle.onShutdown('gRPC in-flight calls', ShutdownPriority.drain, () => server.close(Math.floor(config.shutdownTimeoutMs * 0.8)));
  // Registration order is run order within a priority: pending key uses are written before the pool closes.
  lifecycle.onShutdown('key cache and usage', ShutdownPriority.closeClients, () => service.close());
  lifecycle.onShutdown('NATS', ShutdownPriority.closeClients, () => nats.drain());
  lifecycle.onShutdown('database pool', ShutdownPriority.closeClients, () => pool.end());
});
