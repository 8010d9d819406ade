// Recent answers kept in memory (auth-svc's key lookups, the gateway's accepted authorizations), each entry living
// `ttlMs` from when it was stored: a hit never extends it, so the source is asked again at least once per TTL.
// Bounded: beyond `maxEntries` the least recently used entry goes, so a flood of distinct keys cannot exhaust memory.

/**
 * Taken before asking the source and handed back with its answer: an answer asked for before an invalidation (or a
 * clear) that arrived while the question ran is not stored, so a slow lookup cannot put back what was revoked.
 */
export type CacheTicket = number & { readonly __ticket: unique symbol };

interface Entry<V> {
  readonly value: V;
  readonly expiresAt: number;
}

export class ExpiringCache<V> {
  /** Map order is the order of last use. */
  readonly #entries = new Map<string, Entry<V>>();
  readonly #ttlMs: number;
  readonly #maxEntries: number;
  readonly #now: () => number;
  #generation = 0;

  /** `ttlMs` 0 stores nothing. */
  constructor(options: { ttlMs: number; maxEntries: number; now?: () => number }) {
    this.#ttlMs = options.ttlMs;
    this.#maxEntries = options.maxEntries;
    this.#now = options.now ?? Date.now;
  }

  get size(): number {
    return this.#entries.size;
  }

  /** The stored value for `key`, or undefined when there is none (or it expired). */
  get(key: string): V | undefined {
    return this.lookup(key)?.value;
  }

  /** The stored value for `key` with the time it has left, or undefined when there is none (or it expired). */
  lookup(key: string): { readonly value: V; readonly remainingMs: number } | undefined {
    const entry = this.#entries.get(key);
    if (!entry) return undefined;
    this.#entries.delete(key);
    const remainingMs = entry.expiresAt - this.#now();
    if (remainingMs <= 0) return undefined;
    this.#entries.set(key, entry); // re-insert: Map order is the recency order
    return { value: entry.value, remainingMs };
  }

  ticket(): CacheTicket {
    return this.#generation as CacheTicket;
  }

  /**
   * Stores `value` unless an invalidation or a clear happened since `ticket` was taken, for `ttlMs` when the value's
   * source says it lives less than the cache's TTL (never longer than that TTL).
   */
  set(key: string, value: V, ticket: CacheTicket, ttlMs = this.#ttlMs): void {
    const lifeMs = Math.min(ttlMs, this.#ttlMs);
    if (ticket !== this.#generation || lifeMs <= 0) return;
    this.#entries.delete(key);
    this.#entries.set(key, { value, expiresAt: this.#now() + lifeMs });
    for (const oldest of this.#entries.keys()) {
      if (this.#entries.size <= this.#maxEntries) break;
      this.#entries.delete(oldest);
    }
  }

  invalidate(key: string): void {
    this.#generation += 1;
    this.#entries.delete(key);
  }

  clear(): void {
    this.#generation += 1;
    this.#entries.clear();
  }
}
