// Sign-in attempts are limited per client address (every attempt counts: one address guessing many accounts; an IPv6
// client by its /64, as the API's guard counts it) and per account (every attempt is counted before its password is
// checked, a success starts again: many addresses guessing one password). Counters are shared by the
// replicas in Redis; when Redis cannot answer, each replica keeps limiting in memory.
import { createHash } from 'node:crypto';
import type { Rate } from '@notify/platform';
import type { Redis } from 'ioredis';
import { type RateLimiterRedis, RateLimiterRes } from 'rate-limiter-flexible';
import { limitedAddress } from '../../auth/client-address.ts';
import { sharedLimiter } from '../../rate-limit/redis.ts';

export type SignInDecision = { readonly allowed: true } | { readonly allowed: false; readonly retryAfterSeconds: number };

export interface SignInLimiterOptions {
  readonly redis: Redis;
  /** REDIS_KEY_PREFIX; counters live under `<prefix>panel-sign-in:`. */
  readonly keyPrefix: string;
  readonly addressRate: Rate;
  readonly accountRate: Rate;
}

const limiter = (options: SignInLimiterOptions, scope: string, rate: Rate): RateLimiterRedis =>
  sharedLimiter(options.redis, `${options.keyPrefix}panel-sign-in:${scope}`, rate);

/** Accounts are counted by a hash of the normalized email, so Redis holds no address book. */
const accountKey = (email: string): string => createHash('sha256').update(email.trim().toLowerCase()).digest('base64url');

const retryAfter = (result: RateLimiterRes): number => Math.max(1, Math.ceil(result.msBeforeNext / 1000));

export class SignInLimiter {
  readonly #byAddress: RateLimiterRedis;
  readonly #byAccount: RateLimiterRedis;

  constructor(options: SignInLimiterOptions) {
    this.#byAddress = limiter(options, 'address', options.addressRate);
    this.#byAccount = limiter(options, 'account', options.accountRate);
  }

  /**
   * Counts an attempt from `address` (an IPv6 client by its /64) against `email`, before its password is checked: the
   * account's point is taken first and handed back only by `succeeded` or `notJudged`, so however many attempts arrive
   * at once, no more than the account's limit reach the password check.
   */
  async attempt(address: string, email: string): Promise<SignInDecision> {
    try {
      await this.#byAddress.consume(limitedAddress(address));
      await this.#byAccount.consume(accountKey(email));
      return { allowed: true };
    } catch (error) {
      if (error instanceof RateLimiterRes) return { allowed: false, retryAfterSeconds: retryAfter(error) };
      throw error;
    }
  }

  /** The password was right: the account's count starts again. */
  async succeeded(email: string): Promise<void> {
    await this.#byAccount.delete(accountKey(email));
  }

  /** The attempt could not be judged (auth-svc did not answer): its account point is given back. */
  async notJudged(email: string): Promise<void> {
    await this.#byAccount.reward(accountKey(email), 1);
  }
}
