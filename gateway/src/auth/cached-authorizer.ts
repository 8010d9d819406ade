// Authorize through the gateway's cache: an accepted key is answered from memory until its entry expires
// (AUTH_CACHE_TTL, never extended by a hit) or auth-svc announces a change; concurrent misses for the same key and
// organization share one call. Refusals are never stored: each one reaches auth-svc, whose verdict the brute-force
// guard counts as before. The cache is used only while invalidations are received (`resume`), and starts from nothing
// each time; an answer asked for before an invalidation or a pause is not stored after it (see ExpiringCache's ticket).
import { ExpiringCache, type Counter } from '@notify/platform';
import type { auth } from '@notify/proto';
import { apiKeyPrefix, requestDigest } from './authorization-cache.ts';
import type { AuthorizeCall } from './authorize.ts';

type AuthorizeResponse = auth.AuthorizeResponse__Output;

export interface CachedAuthorizerOptions {
  /** Authorize asked of auth-svc itself (`callAuthorize`). */
  readonly authorize: AuthorizeCall;
  /** AUTH_CACHE_TTL. */
  readonly ttlMs: number;
  readonly maxEntries: number;
  /** notify_gateway_auth_cache_total{result}. */
  readonly lookups: Counter<'result'>;
}

/** An accepted answer, stored under its key's prefix, for the request it answered. */
interface Acceptance {
  readonly digest: string;
  readonly response: AuthorizeResponse;
}

interface Pending {
  readonly prefix: string;
  readonly answer: Promise<AuthorizeResponse>;
}

export class CachedAuthorizer {
  readonly #call: AuthorizeCall;
  readonly #cache: ExpiringCache<Acceptance>;
  readonly #lookups: Counter<'result'>;
  /** Calls under way, by request digest. */
  readonly #inFlight = new Map<string, Pending>();
  #live = false;

  constructor(options: CachedAuthorizerOptions) {
    this.#call = options.authorize;
    this.#cache = new ExpiringCache({ ttlMs: options.ttlMs, maxEntries: options.maxEntries });
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
    const digest = requestDigest(apiKey, organizationId);
    const cached = this.#cache.get(prefix);
    if (cached?.digest === digest) {
      this.#lookups.inc({ result: 'hit' });
      return Promise.resolve(cached.response);
    }
    this.#lookups.inc({ result: 'miss' });
    const pending = this.#inFlight.get(digest);
    if (pending) return pending.answer;
    const ticket = this.#cache.ticket();
    const answer = this.#call(apiKey, organizationId)
      .then((response) => {
        if (this.#live) this.#cache.set(prefix, { digest, response }, ticket);
        return response;
      })
      .finally(() => {
        if (this.#inFlight.get(digest)?.answer === answer) this.#inFlight.delete(digest);
      });
    this.#inFlight.set(digest, { prefix, answer });
    return answer;
  }

  /** The key with this prefix was revoked: its answer goes, and a request arriving now asks auth-svc anew. */
  invalidatePrefix(prefix: string): void {
    this.#cache.invalidate(prefix);
    for (const [digest, pending] of this.#inFlight) if (pending.prefix === prefix) this.#inFlight.delete(digest);
  }

  /** A plan changed (or messages may have been missed): every answer goes. */
  invalidateAll(): void {
    this.#cache.clear();
    this.#inFlight.clear();
  }

  /** Invalidations cannot be received: answer every request from auth-svc until `resume`. */
  pause(): void {
    this.#live = false;
    this.invalidateAll();
  }

  /** Invalidations are received again: start caching from nothing. */
  resume(): void {
    this.invalidateAll();
    this.#live = true;
  }
}
