// API keys this replica saw auth-svc accept recently. They let a valid caller through while its address is blocked for
// failed attempts (someone else behind the same NAT guessing), without the blocked address's guesses reaching auth-svc.
// Only a SHA-256 digest of each key is kept; the set is bounded, least recently accepted first out.
import { createHash } from 'node:crypto';

export interface KnownKeysOptions {
  /** How long an accepted key stays known without being accepted again. */
  readonly ttlMs: number;
  readonly maxEntries: number;
  readonly now?: () => number;
}

const digest = (apiKey: string): string => createHash('sha256').update(apiKey, 'utf8').digest('base64url');

export class KnownKeys {
  /** Digest -> expiry; Map order is the order of the last acceptance. */
  readonly #expiries = new Map<string, number>();
  readonly #ttlMs: number;
  readonly #maxEntries: number;
  readonly #now: () => number;

  constructor(options: KnownKeysOptions) {
    this.#ttlMs = options.ttlMs;
    this.#maxEntries = options.maxEntries;
    this.#now = options.now ?? Date.now;
  }

  get size(): number {
    return this.#expiries.size;
  }

  has(apiKey: string): boolean {
    const key = digest(apiKey);
    const expiry = this.#expiries.get(key);
    if (expiry === undefined) return false;
    if (expiry > this.#now()) return true;
    this.#expiries.delete(key);
    return false;
  }

  /** auth-svc accepted the key just now. */
  accepted(apiKey: string): void {
    const key = digest(apiKey);
    this.#expiries.delete(key);
    this.#expiries.set(key, this.#now() + this.#ttlMs);
    for (const oldest of this.#expiries.keys()) {
      if (this.#expiries.size <= this.#maxEntries) break;
      this.#expiries.delete(oldest);
    }
  }

  /** auth-svc refused the key (revoked since): it no longer passes a blocked address. */
  refused(apiKey: string): void {
    this.#expiries.delete(digest(apiKey));
  }
}
