// Check 10 answered from memory for a replay this gateway has seen answered: a live idempotency record never changes
// (dispatch-svc replaces one only once it has expired), so its 202 can be given again without asking dispatch-svc, for
// as long as dispatch-svc said the record lives (SendResponse.replayable_for_ms, counted from before the call, so never
// past its expiry whatever the clocks), at most `maxAgeMs`. Only an exact replay (the same fingerprint) is answered here;
// a mismatch, a key in use and every key this replica has not seen go to dispatch-svc as before. Per replica: a replay
// that reaches another one is judged by dispatch-svc, with the same answer.
import { type CacheTicket, ExpiringCache } from '@notify/platform';
import type { AcceptedBody } from '@notify/proto';

export interface ReplayMemoryOptions {
  /** Entries kept at most; the least recently used goes first. */
  readonly maxEntries: number;
  /** The longest an entry is kept, whatever the record's life (a database restored from a backup forgets records). */
  readonly maxAgeMs: number;
  /** A monotonic clock in milliseconds; performance.now() unless a test steps its own. */
  readonly now?: () => number;
}

export const replayMemoryDefaults: ReplayMemoryOptions = { maxEntries: 10_000, maxAgeMs: 10 * 60_000 };

interface Remembered {
  readonly fingerprint: string;
  readonly body: AcceptedBody;
}

/** Where a judged call started: the clock's time and the cache's ticket, both taken before asking dispatch-svc. */
export interface ReplayAsk {
  readonly at: number;
  readonly ticket: CacheTicket;
}

/** Records are per project; keys are UUIDs, compared lower-cased as dispatch-svc compares them. */
const keyOf = (projectId: number, idempotencyKey: string): string => `${projectId}/${idempotencyKey.toLowerCase()}`;

export class ReplayMemory {
  readonly #entries: ExpiringCache<Remembered>;
  readonly #now: () => number;

  constructor(options: ReplayMemoryOptions = replayMemoryDefaults) {
    this.#now = options.now ?? (() => performance.now());
    this.#entries = new ExpiringCache({ ttlMs: options.maxAgeMs, maxEntries: options.maxEntries, now: this.#now });
  }

  get size(): number {
    return this.#entries.size;
  }

  /** The 202 body of a replay of this key with this fingerprint, when this replica knows the record still lives. */
  replay(projectId: number, idempotencyKey: string, fingerprint: string): AcceptedBody | undefined {
    const entry = this.#entries.get(keyOf(projectId, idempotencyKey));
    return entry?.fingerprint === fingerprint ? { ...entry.body, idempotent_replay: true } : undefined;
  }

  /** Taken before the call whose answer `remember` may keep. */
  ask(): ReplayAsk {
    return { at: this.#now(), ticket: this.#entries.ticket() };
  }

  /**
   * Keeps dispatch-svc's answer for a key whose record lives `replayableForMs` from the transaction that judged it,
   * counted from `asked` (before the call), so the entry ends no later than the record.
   */
  remember(projectId: number, idempotencyKey: string, fingerprint: string, body: AcceptedBody, replayableForMs: number, asked: ReplayAsk): void {
    const lifeMs = replayableForMs - (this.#now() - asked.at);
    if (replayableForMs <= 0 || lifeMs <= 0) return;
    this.#entries.set(keyOf(projectId, idempotencyKey), { fingerprint, body: { ...body, idempotent_replay: false } }, asked.ticket, lifeMs);
  }
}
