// gateway: the only HTTP edge of Notify. Config, clients, the HTTP listener, readiness and ordered shutdown.
import { channelCredentials, degradable, GrpcClient, runService, ShutdownPriority, type ConfigOf, type Logger, type Registry } from '@notify/platform';
import { authProto, dispatchProto, topology } from '@notify/proto';
import { createApp } from './app.ts';
import { sendManyItems } from './send/send-many.ts';
import { listenForInvalidations } from './auth/authorization-invalidation.ts';
import { createAuthorizationCacheMetrics } from './auth/authorization-metrics.ts';
import { BruteForceGuard, createBruteForceMetrics } from './auth/brute-force-guard.ts';
import { callAuthorize, type AuthClient } from './auth/authorize.ts';
import { CachedAuthorizer } from './auth/cached-authorizer.ts';
import { KeyDirectory } from './auth/key-directory.ts';
import { configSpec, maxPublicBodyBytes } from './config.ts';
import { listen } from './http/listener.ts';
import { createPanelDeps } from './panel/dependencies.ts';
import { SendRateLimiter } from './rate-limit/limiter.ts';
import { UnsubscribeLimiter } from './unsubscribe/unsubscribe-limiter.ts';
import { connectRedis } from './rate-limit/redis.ts';

// Entries are accepted keys only (refusals are never stored): every key in active use, with room to spare.
const authorizationCacheEntries = 10_000;

/**
 * What auth-svc's announcements on NATS keep honest: the prefixes of every key (for the brute-force guard) and, unless
 * AUTH_CACHE_TTL=0, the authorization cache, which stays unused until the subscription is live.
 */
function startKeyKnowledge(options: { config: ConfigOf<typeof configSpec>; auth: AuthClient; logger: Logger; registry: Registry }) {
  const { config, auth, logger } = options;
  const metrics = createAuthorizationCacheMetrics(options.registry);
  const directory = new KeyDirectory({ list: async (after, limit) => (await auth.call('ListKeyPrefixes', { after, limit })).prefixes, logger });
  directory.start();
  const authorizations =
    config.authCacheTtlMs > 0
      ? new CachedAuthorizer({ authorize: callAuthorize(auth), ttlMs: config.authCacheTtlMs, maxEntries: authorizationCacheEntries, lookups: metrics.lookups })
      : undefined;
  const invalidations = listenForInvalidations({
    natsUrl: config.natsUrl,
    natsCredentials: config,
    subject: topology(config.natsPrefix).keyInvalidationSubject,
    targets: authorizations ? [directory, authorizations] : [directory],
    logger,
    received: metrics.invalidations,
  });
  return { directory, authorizations, invalidations };
}

runService('gateway', configSpec, async ({ config, logger, registry, lifecycle, addReadinessCheck }) => {
  const grpcOptions = { token: config.gatewayToken, deadlineMs: config.grpcDeadlineMs, registry, credentials: channelCredentials(config) };
  const auth = new GrpcClient(authProto.AuthService.service, config.authSvcAddr, grpcOptions);
  const dispatch = new GrpcClient(dispatchProto.DispatchService.service, config.dispatchSvcAddr, grpcOptions);
  const reports = new GrpcClient(dispatchProto.ReportService.service, config.dispatchSvcAddr, grpcOptions);
  const redis = connectRedis(config.redisUrl, logger, { sentinels: config.redisSentinels, name: config.redisSentinelName, password: config.redisSentinelPassword });
  const rateLimiter = new SendRateLimiter({
    redis,
    keyPrefix: config.redisKeyPrefix,
    defaultRate: config.sendRate,
    replicas: config.gatewayReplicas,
    logger,
  });
  const readRateLimiter = new SendRateLimiter({
    redis,
    keyPrefix: config.redisKeyPrefix,
    policy: 'read',
    defaultRate: config.readRate,
    replicas: config.gatewayReplicas,
    logger,
  });
  const keys = startKeyKnowledge({ config, auth, logger, registry });
  const bruteForce = new BruteForceGuard({
    redis,
    keyPrefix: config.redisKeyPrefix,
    rate: config.authFailureRate,
    replicas: config.gatewayReplicas,
    directory: keys.directory,
    metrics: createBruteForceMetrics(registry),
    logger,
  });

  const readiness = {
    'auth-svc': () => auth.serving(),
    'dispatch-svc': () => dispatch.serving(),
    // Until every key's prefix is known, a real key could not be told from a guess at a blocked address.
    'api key prefixes': async () => keys.directory.loaded,
    // Without Redis the rate limit falls back to this replica's in-memory share and the gateway keeps serving.
    redis: degradable(async () => (await redis.ping()) === 'PONG'),
    // Without NATS every send asks auth-svc, as with the cache off, and new keys are learnt from auth-svc's verdicts
    // and the periodic reload: reported, never a reason to leave rotation.
    nats: degradable(async () => keys.invalidations.live),
  };
  for (const [name, check] of Object.entries(readiness)) addReadinessCheck(name, check);

  // The web panel: its own gRPC clients (PanelAuthService, PanelService) and its sessions on the same Redis.
  const panel = createPanelDeps({ config, redis, logger, registry });

  const app = createApp({
    auth,
    ...(keys.authorizations && { authorizations: keys.authorizations }),
    dispatch,
    sendMany: { maxItems: sendManyItems(config.dispatchSendMaxItems, config.maxBodyBytes, maxPublicBodyBytes), calls: config.dispatchSendCalls },
    rateLimiter,
    readRateLimiter,
    bruteForce,
    trustedProxyHops: config.trustedProxyHops,
    readiness,
    logger,
    registry,
    maxBodyBytes: config.maxBodyBytes,
    maxBatchBodyBytes: config.maxBatchBodyBytes,
    panel: panel.deps,
    unsubscribe: { reports, limiter: new UnsubscribeLimiter({ redis, keyPrefix: config.redisKeyPrefix, rate: config.unsubscribeRate }), logger },
  });
  const listener = await listen(app.callback(), config.httpPort);
  logger.info({ port: listener.port }, 'HTTP listener ready');

  lifecycle.onShutdown('stop accepting HTTP connections', ShutdownPriority.stopIntake, async () => listener.stopAccepting());
  lifecycle.onShutdown('finish HTTP requests in flight', ShutdownPriority.drain, () => listener.drained());
  lifecycle.onShutdown('gRPC clients', ShutdownPriority.closeClients, async () => {
    auth.close();
    dispatch.close();
    reports.close();
    panel.close();
  });
  lifecycle.onShutdown('NATS (key announcements)', ShutdownPriority.closeClients, async () => {
    keys.directory.stop();
    await keys.invalidations.close();
  });
  lifecycle.onShutdown('Redis', ShutdownPriority.closeClients, async () => {
    // QUIT needs a live connection; without one there is nothing to flush.
    if (redis.status === 'ready') await redis.quit();
    else redis.disconnect();
  });
});
