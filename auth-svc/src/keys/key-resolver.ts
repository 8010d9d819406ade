// Prefix -> key record through the cache: concurrent misses for one prefix share a single query,
// and invalidations (revocation, plan change) drop both cached entries and lookups still in flight.

import type { Counter, ExpiringCache } from '@notify/platform';
import type { Pool } from '@notify/platform/database';
import { findKeyByPrefix, type KeyRecord } from './key-lookup.ts';

export class KeyResolver {
  readonly #pool: Pool;
  readonly #cache: ExpiringCache<KeyRecord | null>;
  readonly #inFlight = new Map<string, Promise<KeyRecord | null>>();
  readonly #lookups: Counter<'result'>;

  constructor(options: { pool: Pool; cache: ExpiringCache<KeyRecord | null>; lookups: Counter<'result'> }) {
    this.#pool = options.pool;
    this.#cache = options.cache;
    this.#lookups = options.lookups;
  }

  /** The key with this prefix, or null when none exists. Unknown prefixes are cached too, so guessing costs the database nothing. */
  resolve(prefix: string): Promise<KeyRecord | null> {
    const cached = this.#cache.get(prefix);
    if (cached !== undefined) {
      this.#lookups.inc({ result: 'hit' });
      return Promise.resolve(cached);
    }
    this.#lookups.inc({ result: 'miss' });
    const pending = this.#inFlight.get(prefix);
    if (pending) return pending;
    const ticket = this.#cache.ticket();
    const lookup = findKeyByPrefix(this.#pool, prefix)
      .then((record) => {
        this.#cache.set(prefix, record ?? null, ticket);
        return record ?? null;
      })
      .finally(() => {
        if (this.#inFlight.get(prefix) === lookup) this.#inFlight.delete(prefix);
      });
    this.#inFlight.set(prefix, lookup);
    return lookup;
  }

  invalidate(prefix: string): void {
    this.#cache.invalidate(prefix);
    this.#inFlight.delete(prefix);
  }

  invalidateAll(): void {
    this.#cache.clear();
    this.#inFlight.clear();
  }
}
