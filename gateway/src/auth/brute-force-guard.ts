// Failed authentications (API keys refused with 401) are limited by what was presented, so that one caller's failures
// never lock out another:
// - A key whose prefix names a key that exists (the key directory) is always judged, whatever its address did, and its
//   failures (a wrong secret, a revoked key) count against that key: past NOTIFY_AUTH_FAILURE_RATE they are answered
//   429 instead of 401. The right secret still passes: it is 256 random bits, so the limit is there to slow a flood and
//   to tell it apart, not to stop a guess that could succeed, and no one who knows a key's prefix can lock its owner
//   out. auth-svc judges such keys from its cache, so the flood never reaches the database.
// - A presentation that names no key (malformed, or an unknown prefix) counts against the client address: past the
//   limit that address's guesses are answered 429 without being asked about, so they never reach auth-svc either,
//   while every real key from the same address (one NAT, one ingress) keeps working.
// Counters are shared by the replicas in Redis; when Redis cannot answer, each replica keeps limiting in memory with
// its share of the rate, like the send rate.

import { Counter, type Logger, type Rate, type Registry } from '@notify/platform';
import type { Redis } from 'ioredis';
import { type RateLimiterRedis, RateLimiterRes } from 'rate-limiter-flexible';
import { ApiError } from '../errors/api-error.ts';
import { throttledFor } from '../rate-limit/headers.ts';
import { fallbackShare } from '../rate-limit/limiter.ts';
import { sharedLimiter } from '../rate-limit/redis.ts';
import { apiKeyPrefix } from './authorization-cache.ts';
import { type KeyRefusal, KeyRefused } from './authorize.ts';
import { limitedAddress } from './client-address.ts';
import type { KeyDirectory } from './key-directory.ts';

export interface BruteForceMetrics {
  /** notify_gateway_auth_failures_total{reason="malformed"|"unknown_key"|"wrong_secret"|"revoked"}. */
  readonly failures: Counter<'reason'>;
  /** notify_gateway_auth_throttled_total{scope="address"|"key"}: presentations answered 429. */
  readonly throttled: Counter<'scope'>;
}

export function createBruteForceMetrics(registry: Registry): BruteForceMetrics {
  const failures = new Counter({
    name: 'notify_gateway_auth_failures_total',
    help: 'API keys refused with 401 (or 429 past the limit), by reason: malformed or unknown_key (a guess, or a typo: counted per client address), wrong_secret or revoked (counted per key)',
    labelNames: ['reason'],
    registers: [registry],
  });
  const throttled = new Counter({
    name: 'notify_gateway_auth_throttled_total',
    help: 'Presentations of an API key answered 429 because of earlier failures, by what was limited: the client address (guesses naming no key) or the key',
    labelNames: ['scope'],
    registers: [registry],
  });
  for (const reason of ['malformed', 'unknown_key', 'wrong_secret', 'revoked']) failures.inc({ reason }, 0);
  for (const scope of ['address', 'key']) throttled.inc({ scope }, 0);
  return { failures, throttled };
}

export interface BruteForceGuardOptions {
  readonly redis: Redis;
  /** REDIS_KEY_PREFIX; counters live under `<prefix>auth-failures:address:` and `<prefix>auth-failures:key:`. */
  readonly keyPrefix: string;
  /** NOTIFY_AUTH_FAILURE_RATE: failed attempts allowed per address, and per key, and window. */
  readonly rate: Rate;
  /** NOTIFY_GATEWAY_REPLICAS: without Redis each replica allows its share. */
  readonly replicas: number;
  readonly directory: KeyDirectory;
  readonly metrics: BruteForceMetrics;
  readonly logger: Logger;
}

/** What a failure counts against. */
type Scope = { readonly kind: 'address'; readonly id: string } | { readonly kind: 'key'; readonly id: string };

/** authorize() answers 400 (X-Organization-ID) or 403 (permission_denied) only for a key auth-svc accepted. */
const keyWasAccepted = (error: unknown): boolean => error instanceof ApiError && (error.status === 400 || error.status === 403);

/** Refusals of a key that exists: counted against the key, whatever the directory knew. */
const refusesRealKey = (refusal: KeyRefusal): boolean => refusal === 'wrong_secret' || refusal === 'revoked';

export class BruteForceGuard {
  readonly #limiter: RateLimiterRedis;
  readonly #points: number;
  readonly #directory: KeyDirectory;
  readonly #metrics: BruteForceMetrics;
  readonly #logger: Logger;

  constructor(options: BruteForceGuardOptions) {
    const keyPrefix = `${options.keyPrefix}auth-failures`;
    this.#limiter = sharedLimiter(options.redis, keyPrefix, options.rate, fallbackShare(options.rate, options.replicas));
    this.#points = options.rate.points;
    this.#directory = options.directory;
    this.#metrics = options.metrics;
    this.#logger = options.logger;
  }

  /**
   * Runs `authenticate` (checks 2-4) for a request from `ip` presenting `apiKey` (undefined: not a key the scheme
   * allows). Throws 429 `{detail}` with Retry-After instead of asking about a presentation that names no key from a
   * blocked address, and instead of the 401 that takes an address or a key past the limit.
   */
  async check<T>(ip: string, apiKey: string | undefined, authenticate: () => Promise<T>): Promise<T> {
    const prefix = apiKey === undefined ? undefined : apiKeyPrefix(apiKey);
    const address: Scope = { kind: 'address', id: `address:${limitedAddress(ip)}` };
    const namesKey = prefix !== undefined && this.#directory.has(prefix);
    if (!namesKey) {
      const blocked = await this.#limiter.get(address.id);
      // Its budget used up: not one more guess reaches auth-svc.
      if (blocked && blocked.consumedPoints >= this.#points) {
        this.#metrics.throttled.inc({ scope: 'address' });
        throw throttledFor(blocked.msBeforeNext / 1000);
      }
    }
    try {
      const result = await authenticate();
      // A key created since the directory was loaded, whose announcement has not arrived (or was lost).
      if (prefix !== undefined) this.#directory.add(prefix);
      return result;
    } catch (error) {
      if (prefix !== undefined && keyWasAccepted(error)) this.#directory.add(prefix);
      if (error instanceof KeyRefused) {
        const reason: KeyRefusal = prefix === undefined ? 'malformed' : error.refusal;
        this.#metrics.failures.inc({ reason });
        if (prefix !== undefined && refusesRealKey(reason)) {
          this.#directory.add(prefix);
          await this.#failed({ kind: 'key', id: `key:${prefix}` }, reason);
        } else {
          await this.#failed(address, reason);
        }
      }
      throw error;
    }
  }

  /**
   * Counts a failure. An address's last failure within its budget is still a 401 (the next guess is refused unasked);
   * a key's failures past its budget are 429. Either way, one warning per limited window, not one per refusal.
   */
  async #failed(scope: Scope, reason: KeyRefusal): Promise<void> {
    const warn = (counted: RateLimiterRes): void => {
      const what =
        scope.kind === 'key'
          ? 'too many failed authentications with one API key: its refusals are 429 until the window ends'
          : 'too many guesses naming no API key from one address: refused unasked until the window ends, real keys from it still judged';
      this.#logger.warn(
        {
          [scope.kind]: scope.id.slice(scope.kind.length + 1),
          reason,
          failures: counted.consumedPoints,
          retryAfterSeconds: Math.ceil(counted.msBeforeNext / 1000),
        },
        what,
      );
    };
    let counted: RateLimiterRes;
    try {
      counted = await this.#limiter.consume(scope.id);
    } catch (refusal) {
      if (!(refusal instanceof RateLimiterRes)) throw refusal;
      if (scope.kind === 'key' && refusal.consumedPoints === this.#points + 1) warn(refusal);
      this.#metrics.throttled.inc({ scope: scope.kind });
      throw throttledFor(refusal.msBeforeNext / 1000);
    }
    if (scope.kind === 'address' && counted.consumedPoints === this.#points) warn(counted);
  }
}
