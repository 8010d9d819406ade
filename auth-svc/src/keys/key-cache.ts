// In-memory cache of key lookups by prefix, positive and negative, each entry living `ttlMs`.
// Bounded: beyond `maxEntries` the least recently used entry goes, so a flood of random prefixes cannot exhaust memory.

/** What a lookup found: the value, or null when the prefix is known to match nothing usable. */
export type CachedLookup<V> = { readonly value: V | null };

interface Entry<V> {
  readonly value: V | null;
  readonly expiresAt: number;
}

/**
 * Taken before a database lookup and handed back with its result: a result read before an invalidation
 * that arrived while the query ran is not cached, so a revoked key cannot be put back by a slow lookup.
 */
export type CacheTicket = number & { readonly __ticket: unique symbol };

export class KeyCache<V> {
  readonly #entries = new Map<string, Entry<V>>();
  readonly #ttlMs: number;
  readonly #maxEntries: number;
  readonly #now: () => number;
  #generation = 0;

  constructor(options: { ttlMs: number; maxEntries: number; now?: () => number }) {
    this.#ttlMs = options.ttlMs;
    this.#maxEntries = options.maxEntries;
    this.#now = options.now ?? Date.now;
  }

  get size(): number {
    return this.#entries.size;
  }

  /** The cached lookup for `prefix`, or undefined when there is none (or it expired). */
  get(prefix: string): CachedLookup<V> | undefined {
    const entry = this.#entries.get(prefix);
    if (!entry) return undefined;
    this.#entries.delete(prefix);
    if (entry.expiresAt <= this.#now()) return undefined;
    this.#entries.set(prefix, entry); // re-insert: Map order is the recency order
    return { value: entry.value };
  }

  ticket(): CacheTicket {
    return this.#generation as CacheTicket;
  }

  /** Caches `value` (null: nothing usable) unless an invalidation happened since `ticket` was taken. */
  set(prefix: string, value: V | null, ticket: CacheTicket): void {
    if (ticket !== this.#generation || this.#ttlMs <= 0) return;
    this.#entries.delete(prefix);
    this.#entries.set(prefix, { value, expiresAt: this.#now() + this.#ttlMs });
    for (const oldest of this.#entries.keys()) {
      if (this.#entries.size <= this.#maxEntries) break;
      this.#entries.delete(oldest);
    }
  }

  invalidate(prefix: string): void {
    this.#generation += 1;
    this.#entries.delete(prefix);
  }

  clear(): void {
    this.#generation += 1;
    this.#entries.clear();
  }
}
