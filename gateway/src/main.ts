// gateway: the only HTTP edge of Notify. Config, clients, the HTTP listener, readiness and ordered shutdown.
import { runService, ShutdownPriority } from '@notify/platform';
import { buildGateway } from './build.ts';
import { configSpec } from './config.ts';
import { listen } from './http/listener.ts';

runService('gateway', configSpec, async ({ config, logger, registry, lifecycle, addReadinessCheck }) => {
  const gateway = buildGateway(config, { logger, registry });
  for (const [name, check] of Object.entries(gateway.readiness)) addReadinessCheck(name, check);
  const listener = await listen(gateway.app.callback(), config.httpPort, { keepAliveTimeoutMs: config.keepAliveTimeoutMs });
  logger.info({ port: listener.port }, 'HTTP listener ready');

  lifecycle.onShutdown('stop accepting HTTP connections', ShutdownPriority.stopIntake, async () => listener.stopAccepting());
  lifecycle.onShutdown('finish HTTP requests in flight', ShutdownPriority.drain, () => listener.drained());
  lifecycle.onShutdown('gRPC clients', ShutdownPriority.closeClients, async () => gateway.closeGrpcClients());
  lifecycle.onShutdown('NATS (key announcements)', ShutdownPriority.closeClients, () => gateway.closeKeyAnnouncements());
  lifecycle.onShutdown('Redis', ShutdownPriority.closeClients, () => gateway.closeRedis());
});
