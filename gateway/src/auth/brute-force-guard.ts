// Failed authentications (API keys refused with 401) are limited per client address: past NOTIFY_AUTH_FAILURE_RATE the
// address is answered 429 until the window ends, its keys no longer judged: a blocked guesser learns nothing more and
// costs no key lookup. A request whose key this replica saw accepted recently still goes through: a valid caller
// sharing the address (one NAT, one proxy) keeps working. Letting any other key through to be judged would tell the
// guesser which guess was right, so a valid key this replica has not seen waits out the window like the rest. Counters are shared by the replicas in Redis; when Redis cannot answer, each replica keeps
// limiting in memory with its share of the rate, like the send rate.
import type { Redis } from 'ioredis';
import { RateLimiterMemory, RateLimiterRedis, RateLimiterRes } from 'rate-limiter-flexible';
import type { Logger } from '@notify/platform';
import { ApiError } from '../errors/api-error.ts';
import { throttledFor } from '../rate-limit/headers.ts';
import { fallbackShare } from '../rate-limit/limiter.ts';
import type { Rate } from '../rate-limit/rate.ts';
import { limitedAddress } from './client-address.ts';
import { KnownKeys } from './known-keys.ts';

export interface BruteForceGuardOptions {
  readonly redis: Redis;
  /** REDIS_KEY_PREFIX; counters live under `<prefix>auth-failures:`. */
  readonly keyPrefix: string;
  /** NOTIFY_AUTH_FAILURE_RATE: failed attempts allowed per address and window. */
  readonly rate: Rate;
  /** NOTIFY_GATEWAY_REPLICAS: without Redis each replica allows its share. */
  readonly replicas: number;
  readonly logger: Logger;
  /** Keys accepted recently, which pass a blocked address (default: up to 10,000 keys, each for an hour). */
  readonly knownKeys?: KnownKeys;
}

/** A credential was judged and refused: only the 401s of checks 2-4 count as failed attempts. */
const isAuthenticationFailure = (error: unknown): boolean => error instanceof ApiError && error.status === 401;

/** authorize() answers 400 (X-Organization-ID) or 403 (permission_denied) only for a key auth-svc accepted. */
const keyWasAccepted = (error: unknown): boolean => error instanceof ApiError && (error.status === 400 || error.status === 403);

export class BruteForceGuard {
  readonly #limiter: RateLimiterRedis;
  readonly #points: number;
  readonly #knownKeys: KnownKeys;
  readonly #logger: Logger;

  constructor(options: BruteForceGuardOptions) {
    const keyPrefix = `${options.keyPrefix}auth-failures`;
    this.#limiter = new RateLimiterRedis({
      storeClient: options.redis,
      keyPrefix,
      points: options.rate.points,
      duration: options.rate.windowSeconds,
      rejectIfRedisNotReady: true,
      insuranceLimiter: new RateLimiterMemory({ keyPrefix, points: fallbackShare(options.rate, options.replicas), duration: options.rate.windowSeconds }),
    });
    this.#points = options.rate.points;
    this.#knownKeys = options.knownKeys ?? new KnownKeys({ ttlMs: 3_600_000, maxEntries: 10_000 });
    this.#logger = options.logger;
  }

  /**
   * Runs `authenticate` (checks 2-4) for a request from `ip` presenting `apiKey` (undefined: a malformed key). Throws
   * 429 `{detail}` with Retry-After instead of judging the key while the address is blocked, unless the key is known
   * to be valid, and instead of the 401 that takes the address past the limit.
   */
  async check<T>(ip: string, apiKey: string | undefined, authenticate: () => Promise<T>): Promise<T> {
    const address = limitedAddress(ip);
    if (apiKey === undefined || !this.#knownKeys.has(apiKey)) {
      const blocked = await this.#limiter.get(address);
      if (blocked && blocked.consumedPoints > this.#points) throw throttledFor(blocked.msBeforeNext / 1000);
    }
    try {
      const result = await authenticate();
      if (apiKey !== undefined) this.#knownKeys.accepted(apiKey);
      return result;
    } catch (error) {
      if (apiKey !== undefined && keyWasAccepted(error)) this.#knownKeys.accepted(apiKey);
      if (isAuthenticationFailure(error)) {
        if (apiKey !== undefined) this.#knownKeys.refused(apiKey);
        await this.#failed(address);
      }
      throw error;
    }
  }

  async #failed(address: string): Promise<void> {
    try {
      await this.#limiter.consume(address);
    } catch (refusal) {
      if (!(refusal instanceof RateLimiterRes)) throw refusal;
      // The failure that crossed the limit: one line per blocked window, not one per refused guess after it.
      if (refusal.consumedPoints === this.#points + 1) {
        this.#logger.warn({ address, failures: refusal.consumedPoints, retryAfterSeconds: Math.ceil(refusal.msBeforeNext / 1000) }, 'too many failed authentications from one address: refused until the window ends, except requests with a known valid key');
      }
      throw throttledFor(refusal.msBeforeNext / 1000);
    }
  }
}
