// Requests to the unsubscribe pages, counted per client address (NOTIFY_UNSUBSCRIBE_RATE): anyone may call them, so a
// client guessing tokens or hammering dispatch-svc through them is slowed down. Shared by the replicas in Redis; when
// Redis cannot answer, each replica keeps counting in memory.

import type { Rate } from '@notify/platform';
import type { Redis } from 'ioredis';
import { type RateLimiterRedis, RateLimiterRes } from 'rate-limiter-flexible';
import { sharedLimiter } from '../rate-limit/redis.ts';

export type UnsubscribeDecision = { readonly allowed: true } | { readonly allowed: false; readonly retryAfterSeconds: number };

export class UnsubscribeLimiter {
  readonly #limiter: RateLimiterRedis;

  constructor(options: { redis: Redis; keyPrefix: string; rate: Rate }) {
    const keyPrefix = `${options.keyPrefix}unsubscribe:`;
    this.#limiter = sharedLimiter(options.redis, keyPrefix, options.rate);
  }

  /** Counts one request from `address`. */
  async consume(address: string): Promise<UnsubscribeDecision> {
    try {
      await this.#limiter.consume(address);
      return { allowed: true };
    } catch (error) {
      if (error instanceof RateLimiterRes) return { allowed: false, retryAfterSeconds: Math.max(1, Math.ceil(error.msBeforeNext / 1000)) };
      throw error;
    }
  }
}
