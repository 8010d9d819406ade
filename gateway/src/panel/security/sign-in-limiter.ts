// Sign-in attempts are limited per client address (every attempt counts: one address guessing many accounts) and per
// account (failures count, a success starts again: many addresses guessing one password). Counters are shared by the
// replicas in Redis; when Redis cannot answer, each replica keeps limiting in memory.
import { createHash } from 'node:crypto';
import type { Redis } from 'ioredis';
import { RateLimiterRedis, RateLimiterRes } from 'rate-limiter-flexible';
import type { Rate } from '../../rate-limit/rate.ts';
import { sharedLimiter } from '../../rate-limit/redis.ts';

export type SignInDecision = { readonly allowed: true } | { readonly allowed: false; readonly retryAfterSeconds: number };

export interface SignInLimiterOptions {
  readonly redis: Redis;
  /** REDIS_KEY_PREFIX; counters live under `<prefix>panel-sign-in:`. */
  readonly keyPrefix: string;
  readonly addressRate: Rate;
  readonly accountRate: Rate;
}

const limiter = (options: SignInLimiterOptions, scope: string, rate: Rate): RateLimiterRedis => sharedLimiter(options.redis, `${options.keyPrefix}panel-sign-in:${scope}`, rate);

/** Accounts are counted by a hash of the normalized email, so Redis holds no address book. */
const accountKey = (email: string): string => createHash('sha256').update(email.trim().toLowerCase()).digest('base64url');

const retryAfter = (result: RateLimiterRes): number => Math.max(1, Math.ceil(result.msBeforeNext / 1000));

export class SignInLimiter {
  readonly #byAddress: RateLimiterRedis;
  readonly #byAccount: RateLimiterRedis;
  readonly #accountPoints: number;

  constructor(options: SignInLimiterOptions) {
    this.#byAddress = limiter(options, 'address', options.addressRate);
    this.#byAccount = limiter(options, 'account', options.accountRate);
    this.#accountPoints = options.accountRate.points;
  }

  /** Counts an attempt from `address` and says whether it may be judged at all. */
  async attempt(address: string, email: string): Promise<SignInDecision> {
    try {
      await this.#byAddress.consume(address);
    } catch (error) {
      if (error instanceof RateLimiterRes) return { allowed: false, retryAfterSeconds: retryAfter(error) };
      throw error;
    }
    const account = await this.#byAccount.get(accountKey(email));
    if (account && account.consumedPoints >= this.#accountPoints) return { allowed: false, retryAfterSeconds: retryAfter(account) };
    return { allowed: true };
  }

  async failed(email: string): Promise<void> {
    await this.#byAccount.consume(accountKey(email)).catch((error: unknown) => {
      // Over the limit already: the next attempt is refused by `attempt`.
      if (!(error instanceof RateLimiterRes)) throw error;
    });
  }

  async succeeded(email: string): Promise<void> {
    await this.#byAccount.delete(accountKey(email));
  }
}
