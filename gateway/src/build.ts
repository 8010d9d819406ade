// The gateway assembled from its settings: the gRPC clients of auth-svc and dispatch-svc, Redis and the limits kept on
// it, what auth-svc's key announcements keep current (the key directory, the authorization cache), the web panel, and
// the Koa app over all of them with the checks /readyz runs. main.ts listens with it.

import { type ConfigOf, channelCredentials, degradable, GrpcClient, type Logger, type Registry } from '@notify/platform';
import { authProto, dispatchProto, topology } from '@notify/proto';
import type Koa from 'koa';
import { createApp, type GatewayState, type ReadinessChecks } from './app.ts';
import { InvalidationListener } from './auth/authorization-invalidation.ts';
import { createAuthorizationCacheMetrics } from './auth/authorization-metrics.ts';
import { type AuthClient, callAuthorize } from './auth/authorize.ts';
import { BruteForceGuard, createBruteForceMetrics } from './auth/brute-force-guard.ts';
import { CachedAuthorizer } from './auth/cached-authorizer.ts';
import { KeyDirectory } from './auth/key-directory.ts';
import { type configSpec, maxPublicBodyBytes } from './config.ts';
import { createPanelDeps } from './panel/dependencies.ts';
import { SendRateLimiter } from './rate-limit/limiter.ts';
import { connectRedis } from './rate-limit/redis.ts';
import { sendManyItems } from './send/send-many.ts';
import { UnsubscribeLimiter } from './unsubscribe/unsubscribe-limiter.ts';

export type GatewayConfig = ConfigOf<typeof configSpec>;

export interface Gateway {
  /** Never listening itself: main.ts binds its callback. */
  readonly app: Koa<GatewayState>;
  /** What /readyz checks, on the public port and the ops port alike. */
  readonly readiness: ReadinessChecks;
  /** Closes the gRPC clients: auth-svc's, dispatch-svc's and the panel's. */
  closeGrpcClients(): void;
  /** Stops reloading the key prefixes and closes the NATS connection the announcements arrive on. */
  closeKeyAnnouncements(): Promise<void>;
  closeRedis(): Promise<void>;
}

// Entries are accepted keys only (refusals are never stored): every key in active use, with room to spare.
const authorizationCacheEntries = 10_000;

export function buildGateway(config: GatewayConfig, { logger, registry }: { logger: Logger; registry: Registry }): Gateway {
  const grpcOptions = { token: config.gatewayToken, deadlineMs: config.grpcDeadlineMs, registry, credentials: channelCredentials(config) };
  const auth = new GrpcClient(authProto.AuthService.service, config.authSvcAddr, grpcOptions);
  const dispatch = new GrpcClient(dispatchProto.DispatchService.service, config.dispatchSvcAddr, grpcOptions);
  const reports = new GrpcClient(dispatchProto.ReportService.service, config.dispatchSvcAddr, grpcOptions);
  const redis = connectRedis(config.redisUrl, logger, {
    sentinels: config.redisSentinels,
    name: config.redisSentinelName,
    password: config.redisSentinelPassword,
  });
  const limits = { redis, keyPrefix: config.redisKeyPrefix, replicas: config.gatewayReplicas, logger };
  const rateLimiter = new SendRateLimiter({ ...limits, defaultRate: config.sendRate });
  const readRateLimiter = new SendRateLimiter({ ...limits, policy: 'read', defaultRate: config.readRate });
  const keys = startKeyKnowledge({ config, auth, logger, registry });
  const bruteForce = new BruteForceGuard({ ...limits, rate: config.authFailureRate, directory: keys.directory, metrics: createBruteForceMetrics(registry) });
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
  return {
    app,
    readiness,
    closeGrpcClients() {
      auth.close();
      dispatch.close();
      reports.close();
      panel.close();
    },
    async closeKeyAnnouncements() {
      keys.directory.stop();
      await keys.invalidations.close();
    },
    async closeRedis() {
      // QUIT needs a live connection; without one there is nothing to flush.
      if (redis.status === 'ready') await redis.quit();
      else redis.disconnect();
    },
  };
}

/**
 * What auth-svc's announcements on NATS keep honest: the prefixes of every key (for the brute-force guard) and, unless
 * AUTH_CACHE_TTL=0, the authorization cache, which stays unused until the subscription is live.
 */
function startKeyKnowledge(options: { config: GatewayConfig; auth: AuthClient; logger: Logger; registry: Registry }) {
  const { config, auth, logger } = options;
  const metrics = createAuthorizationCacheMetrics(options.registry);
  const directory = new KeyDirectory({ list: async (after, limit) => (await auth.call('ListKeyPrefixes', { after, limit })).prefixes, logger });
  directory.start();
  const authorizations =
    config.authCacheTtlMs > 0
      ? new CachedAuthorizer({ authorize: callAuthorize(auth), ttlMs: config.authCacheTtlMs, maxEntries: authorizationCacheEntries, lookups: metrics.lookups })
      : undefined;
  const invalidations = InvalidationListener.listen({
    natsUrl: config.natsUrl,
    natsCredentials: config,
    subject: topology(config.natsPrefix).keyInvalidationSubject,
    targets: authorizations ? [directory, authorizations] : [directory],
    logger,
    received: metrics.invalidations,
  });
  return { directory, authorizations, invalidations };
}
