// Successful Authorize answers, reused for a short while so that a send needs no call to auth-svc. Only acceptances are
// kept: every refusal still goes to auth-svc, so the brute-force guard counts exactly what it counted without a cache.
// Entries are keyed by a SHA-256 digest of the presented key and the organization asked for (the raw key is never
// stored), and indexed by the key's public prefix, which is what auth-svc names when it revokes a key.
// Bounded (least recently used first out) and each entry lives `ttlMs`, never extended by a hit: when an announcement
// is lost, the TTL bounds how stale an entry can be (plus auth-svc's own AUTH_CACHE_TTL, if the auth-svc replica that
// answered missed it too). Until `resume` (the invalidation subscription is live) nothing is stored or served.
import { hash } from 'node:crypto';

interface Entry<V> {
  readonly value: V;
  readonly prefix: string;
  readonly expiresAt: number;
}

/**
 * Taken before the Authorize call and handed back with its answer: an answer asked for before an invalidation (or a
 * pause) that arrived while the call ran is not stored, so a slow call cannot put a revoked key back.
 */
export type CacheTicket = number & { readonly __ticket: unique symbol };

// The issued form `nk_<16 hex>.<secret>`: the prefix is what auth-svc publishes when the key is revoked.
const issuedKey = /^(nk_[0-9a-f]{16})\./;

/** The public prefix of an API key in the issued form, or undefined: such a key could never be invalidated, so it is never cached. */
export function apiKeyPrefix(apiKey: string): string | undefined {
  return issuedKey.exec(apiKey)?.[1];
}

/** One digest of both, so a cache key reveals neither the key nor which organization it was asked for. */
export function cacheKey(apiKey: string, organizationId: number): string {
  return hash('sha256', `${organizationId}:${apiKey}`, 'base64url');
}

export interface AuthorizationCacheOptions {
  /** AUTH_CACHE_TTL; 0 stores nothing. */
  readonly ttlMs: number;
  readonly maxEntries: number;
  readonly now?: () => number;
}

export class AuthorizationCache<V> {
  /** Cache key -> entry; Map order is the order of last use. */
  readonly #entries = new Map<string, Entry<V>>();
  /** Key prefix -> the cache keys of that key (one per organization it was asked for). */
  readonly #byPrefix = new Map<string, Set<string>>();
  readonly #ttlMs: number;
  readonly #maxEntries: number;
  readonly #now: () => number;
  #generation = 0;
  #live = false;

  constructor(options: AuthorizationCacheOptions) {
    this.#ttlMs = options.ttlMs;
    this.#maxEntries = options.maxEntries;
    this.#now = options.now ?? Date.now;
  }

  get size(): number {
    return this.#entries.size;
  }

  /** Whether answers are stored and served: invalidations are being received. */
  get live(): boolean {
    return this.#live;
  }

  /** The stored answer for this cache key, or undefined when there is none (or it expired). */
  get(key: string): V | undefined {
    const entry = this.#entries.get(key);
    if (!entry) return undefined;
    if (entry.expiresAt <= this.#now()) {
      this.#delete(key, entry);
      return undefined;
    }
    this.#entries.delete(key);
    this.#entries.set(key, entry); // re-insert: Map order is the recency order
    return entry.value;
  }

  ticket(): CacheTicket {
    return this.#generation as CacheTicket;
  }

  /** Stores an accepted answer for a key with this prefix, unless an invalidation or a pause happened since `ticket`. */
  set(key: string, prefix: string, value: V, ticket: CacheTicket): void {
    if (ticket !== this.#generation || !this.#live || this.#ttlMs <= 0) return;
    const previous = this.#entries.get(key);
    if (previous) this.#delete(key, previous);
    this.#entries.set(key, { value, prefix, expiresAt: this.#now() + this.#ttlMs });
    let keys = this.#byPrefix.get(prefix);
    if (!keys) this.#byPrefix.set(prefix, (keys = new Set()));
    keys.add(key);
    for (const [oldest, entry] of this.#entries) {
      if (this.#entries.size <= this.#maxEntries) break;
      this.#delete(oldest, entry);
    }
  }

  /** The key with this prefix was revoked (or changed): every organization's answer for it goes. */
  invalidatePrefix(prefix: string): void {
    this.#generation += 1;
    for (const key of this.#byPrefix.get(prefix) ?? []) this.#entries.delete(key);
    this.#byPrefix.delete(prefix);
  }

  /** A plan changed, or invalidations may have been missed: nothing stored is trusted any more. */
  clear(): void {
    this.#generation += 1;
    this.#entries.clear();
    this.#byPrefix.clear();
  }

  /** Invalidations can no longer be received: drop everything and store nothing until `resume`. */
  pause(): void {
    this.#live = false;
    this.clear();
  }

  /** The invalidation subscription is live (again): start from nothing, since messages may have been missed meanwhile. */
  resume(): void {
    this.clear();
    this.#live = true;
  }

  #delete(key: string, entry: Entry<V>): void {
    this.#entries.delete(key);
    const keys = this.#byPrefix.get(entry.prefix);
    keys?.delete(key);
    if (keys?.size === 0) this.#byPrefix.delete(entry.prefix);
  }
}
