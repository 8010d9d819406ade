// Per-destination throttling: how many deliveries to one recipient domain run at once, and how many start per second,
// counted across every mailer replica, slowed when the domain pushes back and sped up again as it accepts.
//
// Shared without a round trip per mail. The replicas agree through a JetStream key-value bucket that holds two kinds
// of keys: `p.<replica>`, each replica's presence (rewritten every few seconds), and `d.<domain>`, a domain's pace
// when it is below its configured limit (absent: the domain runs at its limit). Every replica watches the bucket, so
// it knows the live replicas and each slowed domain's pace from pushed updates, and takes its share locally: of n
// live replicas, the one ranked i by id may run floor(c/n) deliveries (one more for the first c mod n) and start r/n
// per second (a token bucket holding one second's worth), so the replicas together stay within the domain's limits.
// A replica always keeps one delivery per domain: the floor of a domain's concurrency is one per replica.
// The bucket is written only when a pace changes: at most once a second per slowed domain (a compare-and-set, so
// two replicas seeing the same refusal halve it once), and every few seconds for the presence. The hot path of a
// mail is a map lookup and a little arithmetic.
//
// Adaptive: a 421 reply, or a 4.7.x enhanced status (too many connections, rate limited), halves the domain's
// concurrency and rate, down to the floor (one delivery at once, one message a second or the configured rate when
// lower), at most once a second: the replies to the mail already in flight say the same thing. Each second in which
// mail to a slowed domain is accepted raises it by one delivery and a twentieth of its configured rate, back to the
// configured limit (then its key is deleted). A pace left unchanged for the bucket's TTL expires: the domain starts
// again at its limit. Refusals nodemailer's pool answered by sending again itself reach it through `observe`
// (pool-refusals.ts).
//
// A job whose domain has no free delivery or token waits in this replica for one, in order: the wait adds no attempt
// (the attempt's `sending` is recorded, and nothing follows until it is sent), its heartbeat keeps it from being
// offered to another replica, and it leaves its delivery slot to jobs for other domains (the mailer pulls more while
// it waits). At most `parkLimit` jobs wait so per replica; beyond that a job waits in its slot, and the replica pulls
// no more until its jobs move. Never handed back: a nak would count as a delivery in JetStream, and a replica handing
// back what it pulled would spin through a domain's backlog (docs/operations.md, "Per-destination throttling").
import { randomUUID } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import type { KV, KvEntry } from '@nats-io/kv';
import { Counter, Gauge, Histogram, type Logger, type Registry } from '@notify/platform';
import { declareJetStream, type JetStreamClient, type JetStreamManager } from '@notify/platform/nats';
import { destinationOf, type DestinationLimit } from './destination-limits.ts';
import { openBucket } from './kv-bucket.ts';
import { enhancedStatus, type DeliveryOutcome } from './smtp-outcome.ts';

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

export interface DestinationThrottle {
  /** A slot for mail to `address`, once its domain has room; undefined when the job was given back meanwhile. */
  acquire(address: string, job: WaitingJob): Promise<DestinationSlot | undefined>;
  /** Learns from a refusal of mail to `address` that came without a slot's end (one the SMTP pool retried itself). */
  observe(address: string, outcome: DeliveryOutcome): void;
  close(): Promise<void>;
}

/** A domain's pace below its limit, as the bucket holds it (`changedAt`: epoch ms of the last change). */
interface Pace {
  readonly concurrency: number;
  readonly perSecond: number;
  readonly changedAt: number;
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
/** How often a replica rewrites its presence, and how long one that stopped doing so still counts. */
const presenceEveryMs = 5_000;
const presenceExpiryMs = 3 * presenceEveryMs;
/** At most one decrease, and one increase, per domain in this time. */
export const adjustEveryMs = 1_000;
/** The additive increase, as the part of the configured rate added per step. */
const rateSteps = 20;
/** The lowest rate a pushback brings a domain to (lower only if its configured rate is). */
const floorPerSecond = 1;
/** Domains named in the metrics beyond those configured: the first ones slowed; any further one is `other`. */
export const maxLabelledDomains = 50;
/** Pause before watching the bucket again after the watch ended. */
const rewatchDelayMs = 1_000;

/**
 * A reply that says the domain wants less of us: 421 (closing the channel, usually too many connections) or 4.7.x.
 * Greylisting (often 451 4.7.1, its text saying so) is not: it asks for that message again later, not for less mail.
 */
export function isPushback(outcome: DeliveryOutcome): boolean {
  if (outcome.kind !== 'temporary' || /greylist/i.test(outcome.smtpResponse ?? '')) return false;
  return outcome.smtpCode === 421 || (enhancedStatus(outcome.smtpResponse)?.startsWith('4.7.') ?? false);
}

/** The pace after a pushback: half, down to the floor. */
export function slowerPace(pace: Pick<Pace, 'concurrency' | 'perSecond'>, limit: DestinationLimit, now: number): Pace {
  return { concurrency: Math.max(1, Math.floor(pace.concurrency / 2)), perSecond: Math.max(floorOf(limit), pace.perSecond / 2), changedAt: now };
}

/** The pace after a step of accepted mail: one more delivery and a twentieth of the configured rate, up to the limit. */
export function fasterPace(pace: Pick<Pace, 'concurrency' | 'perSecond'>, limit: DestinationLimit, now: number): Pace {
  return {
    concurrency: Math.min(limit.concurrency, pace.concurrency + 1),
    perSecond: Math.min(limit.perSecond, pace.perSecond + limit.perSecond / rateSteps),
    changedAt: now,
  };
}

function floorOf(limit: DestinationLimit): number {
  return Math.min(limit.perSecond, floorPerSecond);
}

function atLimit(pace: Pick<Pace, 'concurrency' | 'perSecond'>, limit: DestinationLimit): boolean {
  return pace.concurrency >= limit.concurrency && pace.perSecond >= limit.perSecond;
}

/** This replica's part of a domain's pace: its deliveries at once and messages per second. */
export function shareOf(pace: Pick<Pace, 'concurrency' | 'perSecond'>, replicas: number, rank: number): { concurrency: number; perSecond: number } {
  const even = Math.floor(pace.concurrency / replicas) + (rank < pace.concurrency % replicas ? 1 : 0);
  return { concurrency: Math.max(1, even), perSecond: pace.perSecond / replicas };
}

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

export async function openDestinationThrottle(
  deps: { js: JetStreamClient; jsm: JetStreamManager; bucket: string; replicas: number; metrics: ThrottleMetrics; logger: Logger },
  settings: ThrottleSettings,
): Promise<DestinationThrottle> {
  const { metrics, logger } = deps;
  const kv: KV = await declareJetStream('destination throttle bucket', () => openBucket(deps.js, deps.jsm, deps.bucket, { ttlMs: paceTtlMs, replicas: deps.replicas }), { logger });
  const self = randomUUID();
  /** Live replicas (this one included), by id, with when each last said so (server time). */
  const presence = new Map<string, number>([[self, Date.now()]]);
  const shared = new Map<string, SharedPace>();
  /** The domain each pace key in the bucket is for, so a deletion (which carries no value) can be placed. */
  const domainsByKey = new Map<string, string>();
  const destinations = new Map<string, Destination>();
  const labelled = new Set<string>();
  let parked = 0;
  let closed = false;

  const limitOf = (name: string): DestinationLimit => settings.domains.get(name) ?? settings.defaults;
  const sharedOf = (name: string): SharedPace | undefined => {
    const found = shared.get(name);
    // Past the bucket's TTL the key is gone without a word to the watchers: the pace is over.
    return found && Date.now() - found.pace.changedAt < paceTtlMs ? found : undefined;
  };
  const paceOf = (name: string): Pick<Pace, 'concurrency' | 'perSecond'> => sharedOf(name)?.pace ?? limitOf(name);
  const labelOf = (name: string): string => {
    if (settings.domains.has(name) || labelled.has(name)) return name;
    if (sharedOf(name) !== undefined && labelled.size < maxLabelledDomains) {
      labelled.add(name);
      return name;
    }
    return 'other';
  };

  // The configured domains' counters exist from the start, at zero, as their pace gauges do.
  for (const name of settings.domains.keys()) {
    for (const reason of ['rate_limited', 'temporary']) metrics.deferrals.inc({ domain: name, reason }, 0);
    for (const where of ['parked', 'in_slot']) metrics.waits.inc({ domain: name, where }, 0);
  }

  /** This replica's place among the live ones, counted again when the presence changes (and every few seconds). */
  let replicas = { count: 1, rank: 0 };
  const countReplicas = (): void => {
    const now = Date.now();
    for (const [id, seenAt] of presence) if (id !== self && now - seenAt >= presenceExpiryMs) presence.delete(id);
    const live = [...presence.keys()].sort();
    replicas = { count: live.length, rank: live.indexOf(self) };
  };
  const shareFor = (name: string): { concurrency: number; perSecond: number } => shareOf(paceOf(name), replicas.count, replicas.rank);

  const showPace = (name: string): void => {
    const label = labelOf(name);
    if (label === 'other') return;
    const limit = limitOf(name);
    const pace = paceOf(name);
    if (!settings.domains.has(name) && atLimit(pace, limit)) {
      for (const gauge of [metrics.concurrencyLimit, metrics.rateLimit, metrics.atFloor]) gauge.remove({ domain: label });
      return;
    }
    metrics.concurrencyLimit.set({ domain: label }, pace.concurrency);
    metrics.rateLimit.set({ domain: label }, pace.perSecond);
    metrics.atFloor.set({ domain: label }, pace.concurrency <= 1 && pace.perSecond <= floorOf(limit) ? 1 : 0);
  };
  for (const name of settings.domains.keys()) showPace(name);

  const destinationFor = (name: string): Destination => {
    let destination = destinations.get(name);
    if (destination === undefined) {
      destination = { name, active: 0, tokens: Math.max(1, shareFor(name).perSecond), refilledAt: Date.now(), queue: [], timer: undefined, writing: false };
      destinations.set(name, destination);
    }
    return destination;
  };

  /** Adds the tokens earned since the last refill, up to a second's worth (at least one); true when it is full. */
  const refill = (destination: Destination, share: { perSecond: number }): boolean => {
    const now = Date.now();
    const capacity = Math.max(1, share.perSecond);
    destination.tokens = Math.min(capacity, destination.tokens + ((now - destination.refilledAt) / 1_000) * share.perSecond);
    destination.refilledAt = now;
    return destination.tokens >= capacity;
  };

  /** Takes a delivery and a token if the domain's share has both. */
  const admit = (destination: Destination): boolean => {
    const share = shareFor(destination.name);
    refill(destination, share);
    if (destination.active >= share.concurrency || destination.tokens < 1) return false;
    destination.active += 1;
    destination.tokens -= 1;
    return true;
  };

  /** Lets waiting jobs go while there is room; when only a token is missing, comes back when the next one is due. */
  const pump = (destination: Destination): void => {
    while (destination.queue.length > 0 && admit(destination)) destination.queue.shift()?.();
    if (destination.queue.length === 0 || destination.timer !== undefined) return;
    const share = shareFor(destination.name);
    if (destination.active >= share.concurrency) return;
    const dueMs = Math.ceil(((1 - destination.tokens) / share.perSecond) * 1_000);
    destination.timer = setTimeout(() => {
      destination.timer = undefined;
      pump(destination);
    }, Math.max(1, dueMs)).unref();
  };
  const pumpAll = (): void => {
    for (const destination of destinations.values()) pump(destination);
  };

  /** Writes a new pace (or deletes it when back at the limit), unless the bucket changed meanwhile: that change wins. */
  const writePace = (destination: Destination, next: Pace): void => {
    const { name } = destination;
    const current = sharedOf(name);
    // A domain whose limit is its floor has no slower pace to write.
    if (destination.writing || closed || (current === undefined && atLimit(next, limitOf(name)))) return;
    destination.writing = true;
    const key = destinationKey(name);
    const value = JSON.stringify({ domain: name, ...next });
    const written = atLimit(next, limitOf(name))
      ? kv.delete(key, current ? { previousSeq: current.revision } : {}).then(() => undefined)
      : (current ? kv.update(key, value, current.revision) : kv.create(key, value)).then((revision) => ({ pace: next, revision }));
    written
      .then(
        (applied) => {
          if (applied === undefined) shared.delete(name);
          else shared.set(name, applied);
          showPace(name);
          pump(destination);
          logger.info({ domain: name, concurrency: next.concurrency, perSecond: next.perSecond }, 'destination pace changed');
        },
        (error: unknown) => logger.debug({ err: error, domain: name }, 'destination pace not changed; another replica changed it first'),
      )
      .finally(() => (destination.writing = false));
  };

  const learn = (destination: Destination, outcome: DeliveryOutcome | undefined): void => {
    if (outcome === undefined || outcome.kind === 'permanent') return;
    const { name } = destination;
    const limit = limitOf(name);
    const current = sharedOf(name)?.pace;
    const now = Date.now();
    if (outcome.kind === 'temporary') {
      const pushback = isPushback(outcome);
      if (pushback && (current === undefined || now - current.changedAt >= adjustEveryMs)) writePace(destination, slowerPace(current ?? limit, limit, now));
      metrics.deferrals.inc({ domain: labelOf(name), reason: pushback ? 'rate_limited' : 'temporary' });
    } else if (current !== undefined && now - current.changedAt >= adjustEveryMs) {
      writePace(destination, fasterPace(current, limit, now));
    }
  };

  const slotFor = (destination: Destination): DestinationSlot => {
    let released = false;
    return {
      release(outcome) {
        if (released) return;
        released = true;
        destination.active -= 1;
        learn(destination, outcome);
        pump(destination);
      },
    };
  };

  const apply = (entry: KvEntry): void => {
    if (entry.key.startsWith('p.')) {
      const id = entry.key.slice(2);
      if (entry.operation === 'PUT') presence.set(id, entry.created.getTime());
      else if (id !== self) presence.delete(id);
      countReplicas();
      pumpAll();
      return;
    }
    const pace = entry.operation === 'PUT' ? readPace(entry) : undefined;
    const name = pace?.domain ?? domainsByKey.get(entry.key);
    if (name === undefined || (shared.get(name)?.revision ?? 0) > entry.revision) return;
    if (pace === undefined) shared.delete(name);
    else {
      shared.set(name, { pace, revision: entry.revision });
      domainsByKey.set(entry.key, name);
    }
    showPace(name);
    const destination = destinations.get(name);
    if (destination !== undefined) pump(destination);
  };

  /** Follows the bucket until closed; a watch that ends (NATS lost for good) is started again, from the last values. */
  let watcher = await kv.watch({ key: '>' });
  const watching = (async () => {
    for (;;) {
      try {
        for await (const entry of watcher) apply(entry);
      } catch (error) {
        if (!closed) logger.warn({ err: error }, 'destination throttle watch failed; watching again');
      }
      if (closed) return;
      await sleep(rewatchDelayMs);
      if (closed) return;
      watcher = await kv.watch({ key: '>' }).catch(() => watcher);
    }
  })();

  const sayPresent = async (): Promise<void> => {
    await kv.put(`p.${self}`, String(Date.now())).catch((error: unknown) => logger.warn({ err: error }, 'destination throttle presence not written'));
    countReplicas();
    // Idle domains whose bucket is full again hold nothing worth keeping.
    for (const [name, destination] of destinations) {
      if (destination.active === 0 && destination.queue.length === 0 && refill(destination, shareFor(name))) {
        destinations.delete(name);
      }
    }
  };
  await sayPresent();
  const presenceTimer = setInterval(() => void sayPresent(), presenceEveryMs);

  return {
    async acquire(address, job) {
      const destination = destinationFor(destinationOf(address));
      if (destination.queue.length === 0 && admit(destination)) return slotFor(destination);
      // Parked, the job leaves its delivery slot to jobs for other domains; once the waiting room is full it keeps it.
      const parking = parked < settings.parkLimit;
      if (parking) {
        parked += 1;
        job.waiting?.(true);
      }
      const stopTimer = metrics.waitSeconds.startTimer();
      const { promise, resolve } = Promise.withResolvers<void>();
      destination.queue.push(resolve);
      pump(destination);
      await promise;
      stopTimer();
      if (parking) {
        parked -= 1;
        job.waiting?.(false);
      }
      metrics.waits.inc({ domain: labelOf(destination.name), where: parking ? 'parked' : 'in_slot' });
      const slot = slotFor(destination);
      if (!job.released) return slot;
      slot.release(undefined);
      return undefined;
    },
    observe(address, outcome) {
      learn(destinationFor(destinationOf(address)), outcome);
    },
    async close() {
      closed = true;
      // Jobs still waiting keep their turns while the mailer drains: only the sharing stops.
      clearInterval(presenceTimer);
      watcher.stop();
      await watching;
      await kv.delete(`p.${self}`).catch((error: unknown) => logger.warn({ err: error }, 'destination throttle presence not removed'));
    },
  };
}
