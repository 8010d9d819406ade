// Authorize through the gateway's cache: an accepted key is answered from memory until it expires or auth-svc
// announces a change; concurrent misses for the same key and organization share one call. Refusals are never stored:
// each one reaches auth-svc, whose verdict the brute-force guard counts as before.
import type { Counter } from '@notify/platform';
import type { auth } from '@notify/proto';
import { apiKeyPrefix, cacheKey, type AuthorizationCache } from './authorization-cache.ts';
import type { AuthorizeCall } from './authorize.ts';

type AuthorizeResponse = auth.AuthorizeResponse__Output;

export interface CachedAuthorizerOptions {
  /** Authorize asked of auth-svc itself (`callAuthorize`). */
  readonly authorize: AuthorizeCall;
  readonly cache: AuthorizationCache<AuthorizeResponse>;
  /** notify_gateway_auth_cache_total{result}. */
  readonly lookups: Counter<'result'>;
}

interface Pending {
  readonly prefix: string;
  readonly answer: Promise<AuthorizeResponse>;
}

export class CachedAuthorizer {
  readonly #call: AuthorizeCall;
  readonly #cache: AuthorizationCache<AuthorizeResponse>;
  readonly #lookups: Counter<'result'>;
  readonly #inFlight = new Map<string, Pending>();

  constructor(options: CachedAuthorizerOptions) {
    this.#call = options.authorize;
    this.#cache = options.cache;
    this.#lookups = options.lookups;
  }

  /**
   * auth-svc's answer for `apiKey` and `organizationId`, from the cache when it holds an acceptance; rejects with
   * auth-svc's refusal (a RemoteError) exactly as the call itself would.
   */
  authorize(apiKey: string, organizationId: number): Promise<AuthorizeResponse> {
    const prefix = apiKeyPrefix(apiKey);
    // Organization 0 (an unusable header) is never accepted, and a key without the issued prefix could never be
    // invalidated: both go straight to auth-svc.
    if (prefix === undefined || organizationId <= 0) return this.#call(apiKey, organizationId);
    const key = cacheKey(apiKey, organizationId);
    const cached = this.#cache.get(key);
    if (cached) {
      this.#lookups.inc({ result: 'hit' });
      return Promise.resolve(cached);
    }
    this.#lookups.inc({ result: 'miss' });
    const pending = this.#inFlight.get(key);
    if (pending) return pending.answer;
    const ticket = this.#cache.ticket();
    const answer = this.#call(apiKey, organizationId)
      .then((response) => {
        this.#cache.set(key, prefix, response, ticket);
        return response;
      })
      .finally(() => {
        if (this.#inFlight.get(key)?.answer === answer) this.#inFlight.delete(key);
      });
    this.#inFlight.set(key, { prefix, answer });
    return answer;
  }

  /** The key with this prefix was revoked: its answers go, and a request arriving now asks auth-svc anew. */
  invalidatePrefix(prefix: string): void {
    this.#cache.invalidatePrefix(prefix);
    for (const [key, pending] of this.#inFlight) if (pending.prefix === prefix) this.#inFlight.delete(key);
  }

  /** A plan changed (or messages may have been missed): every answer goes. */
  invalidateAll(): void {
    this.#cache.clear();
    this.#inFlight.clear();
  }

  /** Invalidations cannot be received: answer every request from auth-svc until `resume`. */
  pause(): void {
    this.#cache.pause();
    this.#inFlight.clear();
  }

  /** Invalidations are received again: start caching from nothing. */
  resume(): void {
    this.#cache.resume();
    this.#inFlight.clear();
  }
}
