// Authorize through the gateway's cache: an accepted key is answered from memory until its entry expires
// (AUTH_CACHE_TTL, never extended by a hit) or auth-svc announces a change; concurrent misses for the same key and
// organization share one call. A key in use is asked again ahead of its expiry: a hit in the last quarter of the TTL
// starts one call in the background whose acceptance replaces the entry, so a busy key's requests never wait for
// auth-svc and every acceptance served is still at most one TTL old. Refusals are never stored: each one reaches
// auth-svc, whose verdict the brute-force guard counts as before. The cache is used only while invalidations are
// received (`resume`), and starts from nothing each time; an answer asked for before an invalidation or a pause is not
// stored after it (see ExpiringCache's ticket).
import { type Counter, ExpiringCache } from '@notify/platform';
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
  /** The cache's clock; tests pass their own. */
  readonly now?: () => number;
}

/** The share of the TTL, at its end, in which a hit asks auth-svc again in the background. */
const refreshAheadShare = 0.25;

/** An accepted answer, stored under its key's prefix, for the request it answered. */
interface Acceptance {
  readonly digest: string;
  readonly response: AuthorizeResponse;
  /** Its one refresh was asked for: whatever that call answers, no other is started for this entry. */
  refreshing: boolean;
}

interface Pending {
  readonly prefix: string;
  readonly answer: Promise<AuthorizeResponse>;
}

export class CachedAuthorizer {
  readonly #call: AuthorizeCall;
  readonly #cache: ExpiringCache<Acceptance>;
  readonly #lookups: Counter<'result'>;
  readonly #refreshAheadMs: number;
  /** Calls under way, by request digest. */
  readonly #inFlight = new Map<string, Pending>();
  #live = false;

  constructor(options: CachedAuthorizerOptions) {
    this.#call = options.authorize;
    this.#cache = new ExpiringCache({ ttlMs: options.ttlMs, maxEntries: options.maxEntries, ...(options.now ? { now: options.now } : {}) });
    this.#lookups = options.lookups;
    this.#refreshAheadMs = options.ttlMs * refreshAheadShare;
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
    const cached = this.#cache.lookup(prefix);
    if (cached?.value.digest === digest) {
      this.#lookups.inc({ result: 'hit' });
      if (cached.remainingMs <= this.#refreshAheadMs && !cached.value.refreshing) {
        cached.value.refreshing = true;
        // A failed refresh changes nothing: the entry lives out its TTL, and the first request after it asks itself.
        this.#ask(prefix, digest, apiKey, organizationId).catch(() => undefined);
      }
      return Promise.resolve(cached.value.response);
    }
    this.#lookups.inc({ result: 'miss' });
    return this.#inFlight.get(digest)?.answer ?? this.#ask(prefix, digest, apiKey, organizationId);
  }

  /** One call to auth-svc, shared by the requests that arrive while it runs; its acceptance is stored unless invalidated since. */
  #ask(prefix: string, digest: string, apiKey: string, organizationId: number): Promise<AuthorizeResponse> {
    const ticket = this.#cache.ticket();
    const answer = this.#call(apiKey, organizationId)
      .then((response) => {
        if (this.#live) this.#cache.set(prefix, { digest, response, refreshing: false }, ticket);
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
