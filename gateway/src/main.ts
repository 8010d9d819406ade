// gateway: the only HTTP edge of Notify. Config, clients, the HTTP listener, readiness and ordered shutdown.
import { degradable, GrpcClient, runService, ShutdownPriority } from '@notify/platform';
import { authProto, dispatchProto } from '@notify/proto';
import { createApp } from './app.ts';
import { BruteForceGuard } from './auth/brute-force-guard.ts';
import { configSpec } from './config.ts';
import { listen } from './http/listener.ts';
import { createPanelDeps } from './panel/dependencies.ts';
import { SendRateLimiter } from './rate-limit/limiter.ts';
import { connectRedis } from './rate-limit/redis.ts';

runService('gateway', configSpec, async ({ config, logger, registry, lifecycle, addReadinessCheck }) => {
  const grpcOptions = { token: config.internalToken, deadlineMs: config.grpcDeadlineMs, registry };
  const auth = new GrpcClient(authProto.AuthService.service, config.authSvcAddr, grpcOptions);
  const dispatch = new GrpcClient(dispatchProto.DispatchService.service, config.dispatchSvcAddr, grpcOptions);
  const redis = connectRedis(config.redisUrl, logger);
  const rateLimiter = new SendRateLimiter({
    redis,
    keyPrefix: config.redisKeyPrefix,
    defaultRate: config.sendRate,
    replicas: config.gatewayReplicas,
    logger,
  });
  const bruteForce = new BruteForceGuard({
    redis,
    keyPrefix: config.redisKeyPrefix,
    rate: config.authFailureRate,
    replicas: config.gatewayReplicas,
    logger,
  });

  const readiness = {
    'auth-svc': () => auth.serving(),
    'dispatch-svc': () => dispatch.serving(),
    // Without Redis the rate limit falls back to this replica's in-memory share and the gateway keeps serving.
    redis: degradable(async () => (await redis.ping()) === 'PONG'),
  };
  for (const [name, check] of Object.entries(readiness)) addReadinessCheck(name, check);

  // The web panel: its own gRPC clients (PanelAuthService, PanelService) and its sessions on the same Redis.
  const panel = createPanelDeps({ config, redis, logger, registry });

  const app = createApp({
    auth,
    dispatch,
    rateLimiter,
    bruteForce,
    trustedProxyHops: config.trustedProxyHops,
    readiness,
    logger,
    registry,
    maxBodyBytes: config.maxBodyBytes,
    panel: panel.deps,
  });
  const listener = await listen(app.callback(), config.httpPort);
  logger.info({ port: listener.port }, 'HTTP listener ready');

  lifecycle.onShutdown('stop accepting HTTP connections', ShutdownPriority.stopIntake, async () => listener.stopAccepting());
  lifecycle.onShutdown('finish HTTP requests in flight', ShutdownPriority.drain, () => listener.drained());
  lifecycle.onShutdown('gRPC clients', ShutdownPriority.closeClients, async () => {
    auth.close();
    dispatch.close();
    panel.close();
  });
  lifecycle.onShutdown('Redis', ShutdownPriority.closeClients, async () => {
    // QUIT needs a live connection; without one there is nothing to flush.
    if (redis.status === 'ready') await redis.quit();
    else redis.disconnect();
  });
});
