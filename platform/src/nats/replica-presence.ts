// Which replicas of a service are alive, so that they can split a limit among themselves without a round trip per
// decision. Each replica writes its presence (`p.<id>`) to a JetStream key-value bucket every few seconds and watches
// the others'; a replica that stopped writing counts until its presence is old (`presenceExpiryMs`), one that closed
// deletes it at once. Every replica ranks the live ones by id the same way, so each takes its own part of a shared
// limit locally (evenShare): of n replicas, the parts add up to the limit. While a replica joins or leaves, the others
// learn of it within a moment (the watch pushes it); a replica that died without a word leaves its part unused, never
// taken twice, until its presence is old.
import { randomUUID } from 'node:crypto';
import type { Logger } from '../logger.ts';
import { type BucketFollower, followBucket, type KV, type KvEntry } from './kv-bucket.ts';

/** How often a replica rewrites its presence, and how long one that stopped doing so still counts. */
export const presenceEveryMs = 5_000;
export const presenceExpiryMs = 3 * presenceEveryMs;

/** This replica's place among the live ones: `rank` of `count`, from 0. */
export interface ReplicaCount {
  readonly count: number;
  readonly rank: number;
}

/**
 * The part of `limit` the replica ranked `rank` of `replicas` takes: an even split, the remainder going one each to
 * the replicas ranked from `offset` on (so that limits of different things, offset by their ids, give their
 * remainders to different replicas). The parts of all the replicas add up to `limit`; a part may be 0 when there are
 * more replicas than the limit.
 */
export function evenShare(limit: number, replicas: number, rank: number, offset = 0): number {
  const turn = (((rank - offset) % replicas) + replicas) % replicas;
  return Math.floor(limit / replicas) + (turn < limit % replicas ? 1 : 0);
}

export class ReplicaPresence {
  readonly #kv: KV;
  readonly #logger: Logger;
  readonly #onChange: () => void;
  readonly #self = randomUUID();
  /** Live replicas (this one included), by id, with when each last said so (server time). */
  readonly #seen = new Map<string, number>([[this.#self, Date.now()]]);
  #counted: ReplicaCount = { count: 1, rank: 0 };
  #follower: BucketFollower | undefined;
  #timer: NodeJS.Timeout | undefined;

  /**
   * Says this replica is present in `kv` and follows the others; `onChange` is called when the count may have changed.
   * `every` runs after each rewrite of the presence (a replica's periodic upkeep).
   */
  static async open(kv: KV, options: { logger: Logger; onChange?: () => void; every?: () => void }): Promise<ReplicaPresence> {
    const presence = new ReplicaPresence(kv, options.logger, options.onChange ?? (() => {}));
    presence.#follower = await followBucket(kv, 'p.>', (entry) => presence.#apply(entry), { logger: options.logger, what: 'replica presence' });
    await presence.#sayPresent();
    presence.#timer = setInterval(() => {
      void presence.#sayPresent().then(options.every);
    }, presenceEveryMs);
    return presence;
  }

  private constructor(kv: KV, logger: Logger, onChange: () => void) {
    this.#kv = kv;
    this.#logger = logger;
    this.#onChange = onChange;
  }

  /** The live replicas and this one's rank among them. */
  get replicas(): ReplicaCount {
    return this.#counted;
  }

  /** Stops following and says this replica is gone, so that the others take its part at once. */
  async close(): Promise<void> {
    clearInterval(this.#timer);
    await this.#follower?.stop();
    await this.#kv.delete(`p.${this.#self}`).catch((error: unknown) => this.#logger.warn({ err: error }, 'replica presence not removed'));
  }

  #apply(entry: KvEntry): void {
    const id = entry.key.slice(2);
    if (entry.operation === 'PUT') this.#seen.set(id, entry.created.getTime());
    else if (id !== this.#self) this.#seen.delete(id);
    this.#count();
  }

  async #sayPresent(): Promise<void> {
    await this.#kv.put(`p.${this.#self}`, String(Date.now())).catch((error: unknown) => this.#logger.warn({ err: error }, 'replica presence not written'));
    this.#count();
  }

  #count(): void {
    const now = Date.now();
    for (const [id, seenAt] of this.#seen) if (id !== this.#self && now - seenAt >= presenceExpiryMs) this.#seen.delete(id);
    const live = [...this.#seen.keys()].sort();
    const counted = { count: live.length, rank: live.indexOf(this.#self) };
    if (counted.count === this.#counted.count && counted.rank === this.#counted.rank) return;
    this.#counted = counted;
    this.#onChange();
  }
}
