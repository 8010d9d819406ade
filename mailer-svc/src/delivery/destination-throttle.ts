// Per-destination throttling: how many deliveries to one recipient domain run at once, and how many start per second,
// counted across every mailer replica, slowed when the domain pushes back and sped up again as it accepts.
//
// Shared without a round trip per mail. The replicas agree through a JetStream key-value bucket that holds two kinds
// of keys: `p.<replica>`, each replica's presence (platform's ReplicaPresence), and `d.<domain>`, a domain's pace
// when it is below its configured limit (absent: the domain runs at its limit). Every replica watches the bucket, so
// it knows the live replicas and each slowed domain's pace from pushed updates, and takes its share locally: of n
// live replicas, the one ranked i by id may run floor(c/n) deliveries (one more for the first c mod n) and start r/n
// per second (a token bucket holding one second's worth), so the replicas together stay within the domain's limits.
// A replica always keeps one delivery per domain: the floor of a domain's concurrency is one per replica.
// The bucket is written only when a pace changes: at most once a second per slowed domain (a compare-and-set, so
// two replicas seeing the same refusal halve it once), and every few seconds for the presence. The hot path of a
// mail is a map lookup and a little arithmetic.
//
// Adaptive (destination-pace.ts): a 421 reply, or a 4.7.x enhanced status (too many connections, rate limited), halves
// the domain's concurrency and rate, down to the floor (one delivery at once, one message a second or the configured
// rate when lower), at most once a second: the replies to the mail already in flight say the same thing. Each second in
// which mail to a slowed domain is accepted raises it by one delivery and a twentieth of its configured rate, back to
// the configured limit (then its key is deleted). A pace left unchanged for the bucket's TTL expires: the domain starts
// again at its limit. Refusals nodemailer's pool answered by sending again itself reach it through `observe`
// (pool-refusals.ts).
//
// A job whose domain has no free delivery or token waits in this replica for one, in order: the wait adds no attempt
// (the attempt's `sending` is recorded, and nothing follows until it is sent), its heartbeat keeps it from being
// offered to another replica, and it leaves its delivery slot to jobs for other domains (the mailer pulls more while
// it waits). At most `parkLimit` jobs wait so per replica; beyond that a job waits in its slot, and the replica pulls
// no more until its jobs move. Never handed back: a nak would count as a delivery in JetStream, and a replica handing
// back what it pulled would spin through a domain's backlog (docs/operations.md, "Per-destination throttling").
import { Counter, Gauge, Histogram, type Logger, type Registry } from '@notify/platform';
import { type BucketFollower, followBucket, type KV, type KvEntry, ReplicaPresence } from '@notify/platform/nats';
import { type DestinationLimit, destinationOf } from './destination-limits.ts';
import { adjustEveryMs, atLimit, fasterPace, floorOf, isPushback, type Pace, shareOf, slowerPace } from './destination-pace.ts';
import type { DeliveryOutcome } from './smtp-outcome.ts';

export interface ThrottleSettings {
  /** The limit of every domain MAILER_DESTINATION_LIMITS does not name. */
  readonly defaults: DestinationLimit;
  /** MAILER_DESTINATION_LIMITS. */
  readonly domains: ReadonlyMap<string, DestinationLimit>;
  /** Jobs one replica keeps waiting for their destination outside its delivery slots; more wait in their slots. */
  readonly parkLimit: number;
}

/** A held job, as the throttle sees it while it waits. */
export interface WaitingJob {
  /** Given back (shutdown deadline): it is not delivered once its turn comes. */
  readonly released: boolean;
  /** Told when the job starts and stops waiting, so the mailer can pull work for other domains meanwhile. */
  waiting?(waiting: boolean): void;
}

/** One delivery to a domain under way. */
export interface DestinationSlot {
  /** Ends the delivery with what the relay answered (undefined: no answer to learn from). */
  release(outcome: DeliveryOutcome | undefined): void;
}

/** A pace read from the bucket, with the revision a compare-and-set needs. */
interface SharedPace {
  readonly pace: Pace;
  readonly revision: number;
}

/** A domain as this replica delivers to it. */
interface Destination {
  readonly name: string;
  active: number;
  tokens: number;
  refilledAt: number;
  readonly queue: (() => void)[];
  timer: NodeJS.Timeout | undefined;
  /** A change of its pace from this replica is on its way to the bucket. */
  writing: boolean;
}

/** A pace nobody changed for this long is dropped from the bucket (its TTL) and forgotten by the replicas. */
export const paceTtlMs = 3_600_000;
/** Domains named in the metrics beyond those configured: the first ones slowed; any further one is `other`. */
export const maxLabelledDomains = 50;

/** A bucket key for the domain: itself when it is a plain host name, its hex spelling otherwise. */
function destinationKey(name: string): string {
  return /^[a-z0-9-]+(?:\.[a-z0-9-]+)*$/.test(name) ? `d.${name}` : `d.x${Buffer.from(name).toString('hex')}`;
}

function readPace(entry: KvEntry): (Pace & { domain: string }) | undefined {
  try {
    const value = entry.json<Partial<Pace & { domain: string }>>();
    const { concurrency, perSecond, changedAt, domain } = value;
    if (typeof domain === 'string' && Number.isFinite(concurrency) && Number.isFinite(perSecond) && Number.isFinite(changedAt)) {
      return { domain, concurrency: Number(concurrency), perSecond: Number(perSecond), changedAt: Number(changedAt) };
    }
  } catch {
    // An unreadable pace is ignored: the domain runs at its limit until the next pushback rewrites it.
  }
  return undefined;
}

export type ThrottleMetrics = ReturnType<typeof createThrottleMetrics>;

export function createThrottleMetrics(registry: Registry) {
  return {
    deferrals: new Counter({
      name: 'notify_destination_deferrals_total',
      help: 'Temporary refusals of mail to a destination (those the SMTP pool retried itself included), by recipient domain (configured or slowed ones; others as `other`) and reason: rate_limited (421 or 4.7.x, slows the domain) or temporary',
      labelNames: ['domain', 'reason'] as const,
      registers: [registry],
    }),
    waits: new Counter({
      name: 'notify_destination_throttle_waits_total',
      help: 'Jobs that found their destination at its limit and waited in this replica, by recipient domain and where: parked (its delivery slot left to other jobs) or in_slot (the waiting room was full)',
      labelNames: ['domain', 'where'] as const,
      registers: [registry],
    }),
    waitSeconds: new Histogram({
      name: 'notify_destination_throttle_wait_seconds',
      help: 'Time a job waited in this replica for its destination to have room',
      buckets: [0.01, 0.05, 0.1, 0.5, 1, 5, 10, 30, 60, 300],
      registers: [registry],
    }),
    concurrencyLimit: new Gauge({
      name: 'notify_destination_concurrency_limit',
      help: 'Deliveries at once a destination is allowed now, all replicas together (configured and slowed domains)',
      labelNames: ['domain'] as const,
      registers: [registry],
    }),
    rateLimit: new Gauge({
      name: 'notify_destination_rate_limit',
      help: 'Messages per second a destination is allowed now, all replicas together (configured and slowed domains)',
      labelNames: ['domain'] as const,
      registers: [registry],
    }),
    atFloor: new Gauge({
      name: 'notify_destination_at_floor',
      help: '1 while a destination is slowed to its floor (one delivery at once, the lowest rate) by its pushback',
      labelNames: ['domain'] as const,
      registers: [registry],
    }),
  };
}

/** Adds the tokens earned since the last refill, up to a second's worth (at least one); true when it is full. */
function refill(destination: Destination, share: { perSecond: number }): boolean {
  const now = Date.now();
  const capacity = Math.max(1, share.perSecond);
  destination.tokens = Math.min(capacity, destination.tokens + ((now - destination.refilledAt) / 1_000) * share.perSecond);
  destination.refilledAt = now;
  return destination.tokens >= capacity;
}

/** What a throttle works with: the bucket it shares (opened with a TTL of `paceTtlMs`), its metrics and its log. */
export interface ThrottleDeps {
  readonly kv: KV;
  readonly metrics: ThrottleMetrics;
  readonly logger: Logger;
}

/** One delivery under way: ends once, whoever calls release again. */
class Slot implements DestinationSlot {
  readonly #destination: Destination;
  readonly #ended: (destination: Destination, outcome: DeliveryOutcome | undefined) => void;
  #released = false;

  constructor(destination: Destination, ended: (destination: Destination, outcome: DeliveryOutcome | undefined) => void) {
    this.#destination = destination;
    this.#ended = ended;
  }

  release(outcome: DeliveryOutcome | undefined): void {
    if (this.#released) return;
    this.#released = true;
    this.#ended(this.#destination, outcome);
  }
}

export class DestinationThrottle {
  readonly #kv: KV;
  readonly #settings: ThrottleSettings;
  readonly #metrics: ThrottleMetrics;
  readonly #logger: Logger;
  readonly #shared = new Map<string, SharedPace>();
  /** The domain each pace key in the bucket is for, so a deletion (which carries no value) can be placed. */
  readonly #domainsByKey = new Map<string, string>();
  readonly #destinations = new Map<string, Destination>();
  readonly #labelled = new Set<string>();
  #parked = 0;
  #closed = false;
  /** The live replicas, set once open. */
  #presence: ReplicaPresence | undefined;
  #paces: BucketFollower | undefined;
  /** Ends a slot: one function for every slot, so a slot is one small object. */
  readonly #slotEnded = (destination: Destination, outcome: DeliveryOutcome | undefined): void => {
    destination.active -= 1;
    this.#learn(destination, outcome);
    this.#pump(destination);
  };

  /** Follows the shared bucket, and says this replica is present before the first job asks for a slot. */
  static async open(deps: ThrottleDeps, settings: ThrottleSettings): Promise<DestinationThrottle> {
    const { kv, logger } = deps;
    const throttle = new DestinationThrottle(kv, deps, settings);
    throttle.#paces = await followBucket(kv, 'd.>', (entry) => throttle.#applyPace(entry), {
      logger,
      what: 'destination throttle',
      restarted: () => throttle.#forgetPaces(),
    });
    throttle.#presence = await ReplicaPresence.open(kv, { logger, onChange: () => throttle.#pumpAll(), every: () => throttle.#forgetIdle() });
    return throttle;
  }

  private constructor(kv: KV, deps: ThrottleDeps, settings: ThrottleSettings) {
    this.#kv = kv;
    this.#settings = settings;
    this.#metrics = deps.metrics;
    this.#logger = deps.logger;
    // The configured domains' counters exist from the start, at zero, as their pace gauges do.
    for (const name of settings.domains.keys()) {
      for (const reason of ['rate_limited', 'temporary']) this.#metrics.deferrals.inc({ domain: name, reason }, 0);
      for (const where of ['parked', 'in_slot']) this.#metrics.waits.inc({ domain: name, where }, 0);
      this.#showPace(name);
    }
  }

  /** A slot for mail to `address`, once its domain has room; undefined when the job was given back meanwhile. */
  async acquire(address: string, job: WaitingJob): Promise<DestinationSlot | undefined> {
    const destination = this.#destinationFor(destinationOf(address));
    if (destination.queue.length === 0 && this.#admit(destination)) return new Slot(destination, this.#slotEnded);
    // Parked, the job leaves its delivery slot to jobs for other domains; once the waiting room is full it keeps it.
    const parking = this.#parked < this.#settings.parkLimit;
    if (parking) {
      this.#parked += 1;
      job.waiting?.(true);
    }
    const stopTimer = this.#metrics.waitSeconds.startTimer();
    const { promise, resolve } = Promise.withResolvers<void>();
    destination.queue.push(resolve);
    this.#pump(destination);
    await promise;
    stopTimer();
    if (parking) {
      this.#parked -= 1;
      job.waiting?.(false);
    }
    this.#metrics.waits.inc({ domain: this.#labelOf(destination.name), where: parking ? 'parked' : 'in_slot' });
    const slot = new Slot(destination, this.#slotEnded);
    if (!job.released) return slot;
    slot.release(undefined);
    return undefined;
  }

  /** Learns from a refusal of mail to `address` that came without a slot's end (one the SMTP pool retried itself). */
  observe(address: string, outcome: DeliveryOutcome): void {
    this.#learn(this.#destinationFor(destinationOf(address)), outcome);
  }

  async close(): Promise<void> {
    this.#closed = true;
    // Jobs still waiting keep their turns while the mailer drains: only the sharing stops.
    await this.#paces?.stop();
    await this.#presence?.close();
  }

  #limitOf(name: string): DestinationLimit {
    return this.#settings.domains.get(name) ?? this.#settings.defaults;
  }

  #sharedOf(name: string): SharedPace | undefined {
    const found = this.#shared.get(name);
    // Past the bucket's TTL the key is gone without a word to the watchers: the pace is over.
    return found && Date.now() - found.pace.changedAt < paceTtlMs ? found : undefined;
  }

  #paceOf(name: string): Pick<Pace, 'concurrency' | 'perSecond'> {
    return this.#sharedOf(name)?.pace ?? this.#limitOf(name);
  }

  #shareFor(name: string): { concurrency: number; perSecond: number } {
    const { count, rank } = this.#presence?.replicas ?? { count: 1, rank: 0 };
    return shareOf(this.#paceOf(name), count, rank);
  }

  #labelOf(name: string): string {
    if (this.#settings.domains.has(name) || this.#labelled.has(name)) return name;
    if (this.#sharedOf(name) !== undefined && this.#labelled.size < maxLabelledDomains) {
      this.#labelled.add(name);
      return name;
    }
    return 'other';
  }

  #showPace(name: string): void {
    const label = this.#labelOf(name);
    if (label === 'other') return;
    const { concurrencyLimit, rateLimit, atFloor } = this.#metrics;
    const limit = this.#limitOf(name);
    const pace = this.#paceOf(name);
    if (!this.#settings.domains.has(name) && atLimit(pace, limit)) {
      for (const gauge of [concurrencyLimit, rateLimit, atFloor]) gauge.remove({ domain: label });
      return;
    }
    concurrencyLimit.set({ domain: label }, pace.concurrency);
    rateLimit.set({ domain: label }, pace.perSecond);
    atFloor.set({ domain: label }, pace.concurrency <= 1 && pace.perSecond <= floorOf(limit) ? 1 : 0);
  }

  #destinationFor(name: string): Destination {
    let destination = this.#destinations.get(name);
    if (destination === undefined) {
      destination = {
        name,
        active: 0,
        tokens: Math.max(1, this.#shareFor(name).perSecond),
        refilledAt: Date.now(),
        queue: [],
        timer: undefined,
        writing: false,
      };
      this.#destinations.set(name, destination);
    }
    return destination;
  }

  /** Takes a delivery and a token if the domain's share has both. */
  #admit(destination: Destination): boolean {
    const share = this.#shareFor(destination.name);
    refill(destination, share);
    if (destination.active >= share.concurrency || destination.tokens < 1) return false;
    destination.active += 1;
    destination.tokens -= 1;
    return true;
  }

  /** Lets waiting jobs go while there is room; when only a token is missing, comes back when the next one is due. */
  #pump(destination: Destination): void {
    while (destination.queue.length > 0 && this.#admit(destination)) destination.queue.shift()?.();
    if (destination.queue.length === 0 || destination.timer !== undefined) return;
    const share = this.#shareFor(destination.name);
    if (destination.active >= share.concurrency) return;
    const dueMs = Math.ceil(((1 - destination.tokens) / share.perSecond) * 1_000);
    destination.timer = setTimeout(
      () => {
        destination.timer = undefined;
        this.#pump(destination);
      },
      Math.max(1, dueMs),
    ).unref();
  }

  #learn(destination: Destination, outcome: DeliveryOutcome | undefined): void {
    if (outcome === undefined || outcome.kind === 'permanent') return;
    const { name } = destination;
    const limit = this.#limitOf(name);
    const current = this.#sharedOf(name)?.pace;
    const now = Date.now();
    if (outcome.kind === 'temporary') {
      const pushback = isPushback(outcome);
      if (pushback && (current === undefined || now - current.changedAt >= adjustEveryMs))
        this.#writePace(destination, slowerPace(current ?? limit, limit, now));
      this.#metrics.deferrals.inc({ domain: this.#labelOf(name), reason: pushback ? 'rate_limited' : 'temporary' });
    } else if (current !== undefined && now - current.changedAt >= adjustEveryMs) {
      this.#writePace(destination, fasterPace(current, limit, now));
    }
  }

  /** Writes a new pace (or deletes it when back at the limit), unless the bucket changed meanwhile: that change wins. */
  #writePace(destination: Destination, next: Pace): void {
    const { name } = destination;
    const current = this.#sharedOf(name);
    const backAtLimit = atLimit(next, this.#limitOf(name));
    // A domain whose limit is its floor has no slower pace to write.
    if (destination.writing || this.#closed || (current === undefined && backAtLimit)) return;
    destination.writing = true;
    const key = destinationKey(name);
    const value = JSON.stringify({ domain: name, ...next });
    const written = backAtLimit
      ? this.#kv.delete(key, current ? { previousSeq: current.revision } : {}).then(() => undefined)
      : (current ? this.#kv.update(key, value, current.revision) : this.#kv.create(key, value)).then((revision) => ({ pace: next, revision }));
    written
      .then(
        (applied) => {
          if (applied === undefined) this.#shared.delete(name);
          else this.#shared.set(name, applied);
          this.#showPace(name);
          this.#pump(destination);
          this.#logger.info({ domain: name, concurrency: next.concurrency, perSecond: next.perSecond }, 'destination pace changed');
        },
        (error: unknown) => this.#logger.debug({ err: error, domain: name }, 'destination pace not changed; another replica changed it first'),
      )
      .finally(() => (destination.writing = false));
  }

  #applyPace(entry: KvEntry): void {
    const pace = entry.operation === 'PUT' ? readPace(entry) : undefined;
    const name = pace?.domain ?? this.#domainsByKey.get(entry.key);
    if (name === undefined || (this.#shared.get(name)?.revision ?? 0) > entry.revision) return;
    if (pace === undefined) this.#shared.delete(name);
    else {
      this.#shared.set(name, { pace, revision: entry.revision });
      this.#domainsByKey.set(entry.key, name);
    }
    this.#showPace(name);
    const destination = this.#destinations.get(name);
    if (destination !== undefined) this.#pump(destination);
  }

  /** The bucket was made again: the paces and revisions known are no longer its, and its last values come anew. */
  #forgetPaces(): void {
    const slowed = [...this.#shared.keys()];
    this.#shared.clear();
    this.#domainsByKey.clear();
    for (const name of slowed) this.#showPace(name);
  }

  /** A replica joined or left: every domain's share changed. */
  #pumpAll(): void {
    for (const destination of this.#destinations.values()) this.#pump(destination);
  }

  /** Idle domains whose bucket is full again hold nothing worth keeping. */
  #forgetIdle(): void {
    for (const [name, destination] of this.#destinations) {
      if (destination.active === 0 && destination.queue.length === 0 && refill(destination, this.#shareFor(name))) {
        this.#destinations.delete(name);
      }
    }
  }
}
