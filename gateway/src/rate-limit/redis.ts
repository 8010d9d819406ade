// The Redis connection behind the shared rate limit. It must fail fast: a request never waits for Redis, it falls back
// to this replica's in-memory share instead (limiter.ts).
import { Redis } from 'ioredis';
import { RateLimiterMemory, RateLimiterRedis } from 'rate-limiter-flexible';
import type { Logger, Rate } from '@notify/platform';

export function connectRedis(url: string, logger: Logger): Redis {
  const redis = new Redis(url, {
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
