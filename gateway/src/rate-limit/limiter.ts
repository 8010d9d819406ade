// Check 6: the per-key send rate, shared by every gateway replica through Redis. When Redis cannot answer, each replica
// keeps serving with an in-memory limiter holding its share of the rate (docs/contract.md, "Rate limit"). The reads of
// messages use a second instance, policy `read`, whose counters are apart (docs/contract.md, "Reading messages").

import { type Logger, parseRate, type Rate } from '@notify/platform';
import type { Redis } from 'ioredis';
import { type RateLimiterRedis, RateLimiterRes } from 'rate-limiter-flexible';
import { sharedLimiter } from './redis.ts';

/** The outcome of counting one request. */
export interface RateDecision {
  readonly allowed: boolean;
  /** The bucket's name in the RateLimit headers: `send`, or `read` for the message status reads. */
  readonly policy: string;
  readonly rate: Rate;
  readonly remaining: number;
  /** Whole seconds until the window resets; at least 1 when the request was refused. */
  readonly resetSeconds: number;
}

export interface SendRateLimiterOptions {
  readonly redis: Redis;
  /** REDIS_KEY_PREFIX; counters live under `<prefix><policy>-rate:`. */
  readonly keyPrefix: string;
  /** The bucket: `send` (the default) or `read`, each counted apart, so reads never use up sends. */
  readonly policy?: string;
  /** NOTIFY_PUBLIC_SEND_RATE, for keys without a rate of their own (NOTIFY_PUBLIC_READ_RATE for the read bucket). */
  readonly defaultRate: Rate;
  /** NOTIFY_GATEWAY_REPLICAS: the in-memory fallback allows `points / replicas` so the replicas together keep the rate. */
  readonly replicas: number;
  readonly logger: Logger;
}

export function fallbackShare(rate: Rate, replicas: number): number {
  return Math.max(1, Math.floor(rate.points / replicas));
}

export class SendRateLimiter {
  readonly #options: SendRateLimiterOptions;
  /** One limiter per distinct rate: operators configure a handful, not one per key. */
  readonly #limiters = new Map<string, RateLimiterRedis>();
  /** Per-key rate texts already parsed (an unparsable one is logged once and replaced by the default). */
  readonly #keyRates = new Map<string, Rate>();

  constructor(options: SendRateLimiterOptions) {
    this.#options = options;
  }

  /** Counts one request of API key `keyId` against `keyRate` (its own rate), or the default rate when that is empty. */
  async consume(keyId: number, keyRate: string): Promise<RateDecision> {
    const rate = this.#rateOf(keyRate);
    const policy = this.#options.policy ?? 'send';
    try {
      return decision(true, policy, rate, await this.#limiterFor(rate).consume(String(keyId)));
    } catch (error) {
      if (error instanceof RateLimiterRes) return decision(false, policy, rate, error);
      throw error;
    }
  }

  /**
   * Counts up to `wanted` more requests of API key `keyId` at once (the items of a batch): as many as the window has
   * left, the first ones first. The points the window could not cover are given back at once, so a batch past the
   * limit uses only what was left. `granted` is how many were counted.
   */
  async consumeUpTo(keyId: number, keyRate: string, wanted: number): Promise<{ granted: number; decision: RateDecision }> {
    const rate = this.#rateOf(keyRate);
    const policy = this.#options.policy ?? 'send';
    const limiter = this.#limiterFor(rate);
    let result: RateLimiterRes;
    try {
      result = await limiter.consume(String(keyId), wanted);
    } catch (error) {
      if (!(error instanceof RateLimiterRes)) throw error;
      result = error;
    }
    const before = result.consumedPoints - wanted;
    const granted = Math.min(wanted, Math.max(0, rate.points - before));
    if (granted < wanted) await limiter.reward(String(keyId), wanted - granted);
    const remaining = Math.max(0, rate.points - before - granted);
    return { granted, decision: decision(true, policy, rate, { msBeforeNext: result.msBeforeNext, remainingPoints: remaining }) };
  }

  /** Gives back `points` counted earlier for API key `keyId` (batch items that were not accepted after all). */
  async refund(keyId: number, keyRate: string, points: number): Promise<void> {
    if (points > 0) await this.#limiterFor(this.#rateOf(keyRate)).reward(String(keyId), points);
  }

  #rateOf(keyRate: string): Rate {
    if (keyRate === '') return this.#options.defaultRate;
    let rate = this.#keyRates.get(keyRate);
    if (!rate) {
      try {
        rate = parseRate(keyRate);
      } catch (error) {
        this.#options.logger.warn({ keyRate, err: error }, 'an API key has an unparsable send rate; the default applies');
        rate = this.#options.defaultRate;
      }
      this.#keyRates.set(keyRate, rate);
    }
    return rate;
  }

  #limiterFor(rate: Rate): RateLimiterRedis {
    const id = `${rate.points}/${rate.windowSeconds}`;
    let limiter = this.#limiters.get(id);
    if (!limiter) {
      // The rate is part of the key, so a key whose rate changes starts a fresh window instead of inheriting one
      // measured against another limit.
      const keyPrefix = `${this.#options.keyPrefix}${this.#options.policy ?? 'send'}-rate:${id}`;
      limiter = sharedLimiter(this.#options.redis, keyPrefix, rate, fallbackShare(rate, this.#options.replicas));
      this.#limiters.set(id, limiter);
    }
    return limiter;
  }
}

function decision(allowed: boolean, policy: string, rate: Rate, result: Pick<RateLimiterRes, 'msBeforeNext' | 'remainingPoints'>): RateDecision {
  const resetSeconds = Math.max(0, Math.ceil(result.msBeforeNext / 1000));
  return { allowed, policy, rate, remaining: result.remainingPoints, resetSeconds: allowed ? resetSeconds : Math.max(1, resetSeconds) };
}
