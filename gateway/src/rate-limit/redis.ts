// The Redis connection behind the shared rate limit. It must fail fast: a request never waits for Redis, it falls back
// to this replica's in-memory share instead (limiter.ts).

import type { Logger, Rate } from '@notify/platform';
import { Redis } from 'ioredis';
import { RateLimiterMemory, RateLimiterRedis } from 'rate-limiter-flexible';

/** One Redis Sentinel, from REDIS_SENTINELS. */
export interface SentinelAddress {
  readonly host: string;
  readonly port: number;
}

/**
 * The sentinels that name the gateway's Redis master (REDIS_SENTINELS, REDIS_SENTINEL_NAME, REDIS_SENTINEL_PASSWORD).
 * With them, only the user, password, database and TLS (rediss) of REDIS_URL apply to the master: its host is ignored.
 */
export interface SentinelSettings {
  readonly sentinels: readonly SentinelAddress[];
  /** The master group the sentinels monitor. */
  readonly name: string;
  /** The sentinels' own password, if they have one (empty: none). */
  readonly password: string;
}

/** REDIS_SENTINELS: `host:port` entries, comma-separated (empty: no sentinels). */
export function parseSentinels(raw: string): SentinelAddress[] {
  if (raw.trim() === '') return [];
  return raw.split(',').map((entry) => {
    const match = /^\s*(\[[0-9A-Fa-f:.]+\]|[A-Za-z0-9.-]+):(\d{1,5})\s*$/.exec(entry);
    const port = Number(match?.[2]);
    if (!match?.[1] || port < 1 || port > 65_535) throw new Error('must be host:port entries separated by commas');
    return { host: match[1].replace(/^\[(.*)\]$/, '$1'), port };
  });
}

/**
 * With sentinels, ioredis asks them for the master of `name` at every (re)connect and checks that the server it reaches
 * is still a master; when the master dies, the reconnects (retryStrategy) find the promoted replica. ioredis's
 * `failoverDetector` is left off: its +switch-master handler can close a connect in progress, which ends the client
 * for good (status `end`, no more reconnects); with it on, one run of test/e2e/redis-sentinel-failover.test.ts under
 * load never reconnected.
 */
function sentinelOptions(sentinel: SentinelSettings | undefined) {
  if (!sentinel?.sentinels.length) return {};
  return {
    sentinels: sentinel.sentinels.map(({ host, port }) => ({ host, port })),
    name: sentinel.name,
    ...(sentinel.password ? { sentinelPassword: sentinel.password } : {}),
    // A stalled sentinel must not hold the reconnect: the next one is asked instead.
    sentinelCommandTimeout: 500,
  };
}

export function connectRedis(url: string, logger: Logger, sentinel?: SentinelSettings): Redis {
  const redis = new Redis(url, {
    ...sentinelOptions(sentinel),
    // Commands fail at once while disconnected instead of queueing behind a reconnect.
    enableOfflineQueue: false,
    maxRetriesPerRequest: 1,
    // A connected but stalled Redis must not hold requests either.
    commandTimeout: 500,
    // The commands of requests that arrive together (the rate limit of each) leave in one write and their replies come
    // back in one read, instead of a socket write per request. While one such batch waits for Redis the next one
    // gathers, so with Redis stalled a request may wait out two command timeouts (1 s) before falling back.
    enableAutoPipelining: true,
    connectTimeout: 2_000,
    retryStrategy: (attempt) => Math.min(attempt * 200, 2_000),
  });
  // ioredis reports every failed reconnect; log the transitions, not each attempt.
  let reachable = true;
  redis.on('error', (error: Error) => {
    if (!reachable) return;
    reachable = false;
    logger.warn({ err: error }, "Redis unreachable: rate limits fall back to this replica's share");
  });
  redis.on('ready', () => {
    if (reachable) return;
    reachable = true;
    logger.info('Redis reachable again: rate limits are shared');
  });
  return redis;
}

/**
 * A limiter whose counters the replicas share in Redis under `keyPrefix`. While Redis cannot answer, this replica
 * counts in memory instead, up to `fallbackPoints` per window (the whole rate unless the caller divides it).
 */
export function sharedLimiter(redis: Redis, keyPrefix: string, rate: Rate, fallbackPoints = rate.points): RateLimiterRedis {
  return new RateLimiterRedis({
    storeClient: redis,
    keyPrefix,
    points: rate.points,
    duration: rate.windowSeconds,
    rejectIfRedisNotReady: true,
    insuranceLimiter: new RateLimiterMemory({ keyPrefix, points: fallbackPoints, duration: rate.windowSeconds }),
  });
}
