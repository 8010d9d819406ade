// api_keys.last_used_at, kept off Authorize's hot path: uses are noted in memory (at most one per key per interval)
// and written in one batched UPDATE by a background flush. It is an operator's hint, so a failed flush is logged, not retried.
import type { Logger } from '@notify/platform';
import type { Pool } from '@notify/platform/database';

export interface KeyUse {
  readonly keyId: number;
  readonly usedAt: Date;
}

/** Decides which uses are worth writing: the first use of a key, then at most one per `minIntervalMs`. */
export class UsageTracker {
  readonly #lastNoted = new Map<number, number>();
  readonly #pending = new Map<number, Date>();
  readonly #minIntervalMs: number;
  readonly #now: () => number;

  constructor(options: { minIntervalMs: number; now?: () => number }) {
    this.#minIntervalMs = options.minIntervalMs;
    this.#now = options.now ?? Date.now;
  }

  touch(keyId: number): void {
    const now = this.#now();
    const last = this.#lastNoted.get(keyId);
    if (last !== undefined && now - last < this.#minIntervalMs) return;
    this.#lastNoted.set(keyId, now);
    this.#pending.set(keyId, new Date(now));
  }

  /** Hands over the uses noted since the last call, and forgets keys idle for a whole interval (memory stays bounded). */
  take(): KeyUse[] {
    const uses = [...this.#pending].map(([keyId, usedAt]) => ({ keyId, usedAt }));
    this.#pending.clear();
    const now = this.#now();
    for (const [keyId, noted] of this.#lastNoted) {
      if (now - noted >= this.#minIntervalMs) this.#lastNoted.delete(keyId);
    }
    return uses;
  }
}

// GREATEST: replicas flush independently, and an older use must not overwrite a newer one.
const recordUses = `
  UPDATE api_keys k
     SET last_used_at = GREATEST(k.last_used_at, u.used_at)
    FROM unnest($1::bigint[], $2::timestamptz[]) AS u(id, used_at)
   WHERE k.id = u.id`;

export async function writeUses(pool: Pool, uses: readonly KeyUse[]): Promise<void> {
  if (uses.length === 0) return;
  await pool.query({
    name: 'auth-record-key-uses',
    text: recordUses,
    values: [uses.map((use) => use.keyId), uses.map((use) => use.usedAt)],
  });
}

/** Flushes `tracker` every `flushIntervalMs` until stopped; `stop` writes what is still pending. */
export function startUsageFlusher(options: { tracker: UsageTracker; pool: Pool; flushIntervalMs: number; logger: Logger }): { stop(): Promise<void> } {
  const { tracker, pool, logger } = options;
  let running: Promise<void> = Promise.resolve();
  const flush = (): Promise<void> => {
    running = running.then(() => writeUses(pool, tracker.take()).catch((error: unknown) => logger.warn({ err: error }, 'recording API key use failed')));
    return running;
  };
  const timer = setInterval(() => void flush(), options.flushIntervalMs);
  timer.unref();
  return {
    stop() {
      clearInterval(timer);
      return flush();
    },
  };
}
