// The mailer's work loop: pulls jobs from the shared durable consumer and delivers up to `concurrency` at once, each
// as job-delivery.ts describes.
//
// It pulls with fetch() for exactly its free slots rather than consume(): consume() asks for more as soon as messages
// arrive, not as they are finished, so a busy replica would hoard jobs whose ack wait runs out in its buffer. Asking
// only for free slots bounds what each replica holds, which lets the consumer's max_ack_pending stay large enough for
// jobs waiting out a retry delay (a delayed nak keeps its job pending on the server). A busy replica pulls again once a
// quarter of its slots are free, not at each free slot: one pull request (and its subscription) per few jobs rather
// than one per job, while the other slots keep delivering. A job waiting for its recipient's domain to have room
// (destination-throttle.ts) gives its slot up meanwhile, so a throttled domain never holds up the others: a replica
// then holds more jobs than its concurrency, the waiting ones included (at most the throttle's waiting room more).
//
// Traces: each job received is a `process` span, the child of the context its headers carry (the message's create span
// in dispatch-svc), so every attempt, a retry hours later included, continues the trace of the request that accepted it.
import { setTimeout as sleep } from 'node:timers/promises';
import { type Logger, recordFailure, type Span, withActiveSpan } from '@notify/platform';
import { carriedContext, type JetStreamClient, type JetStreamPublisher, type JsMsg, startProcessSpan } from '@notify/platform/nats';
import type { Topology } from '@notify/proto';
import type { Renderer } from '@notify/templating';
import type { RetryPolicy } from './decision.ts';
import type { DestinationThrottle } from './destination-throttle.ts';
import { eventFailureRetryMs, type HeldJob, JobDelivery } from './job-delivery.ts';
import type { MailSender } from './mail-sender.ts';
import type { MailerMetrics } from './metrics.ts';
import type { OutcomeLedger } from './outcome-ledger.ts';

export interface MailerSettings extends RetryPolicy {
  concurrency: number;
  ackWaitMs: number;
}

export interface MailerDependencies {
  js: JetStreamClient;
  /** Publishes the delivery events: `js` (a test wraps it to inject faults). */
  publisher: JetStreamPublisher;
  /** Resolves once the NATS server has answered a ping sent now on the replica's connection (its `flush()`). */
  flush: () => Promise<void>;
  names: Topology;
  renderer: Renderer;
  sender: MailSender;
  ledger: OutcomeLedger;
  /** Per-destination limits (destination-throttle.ts); without it every domain gets mail as fast as jobs come. */
  throttle?: DestinationThrottle;
  metrics: MailerMetrics;
  logger: Logger;
  /** Jitter source for retry delays. */
  random?: () => number;
  /**
   * Test-only fault injection (NOTIFY_TEST_FAULT=exit-after-send): called once the relay accepted a message and the
   * ledger recorded it, before the acknowledgement (the `sent` event, published with the ledger write, may or may not be
   * recorded yet), to crash the replica at that point.
   */
  afterSend?: () => void;
}

/**
 * Delay before a job given back by a stopping replica is offered again: long enough for this replica's connection, and
 * the pull request still open on it, to be gone. NATS 2.9 redelivers a job handed back at once (a plain nak) while
 * that request is open twice, to two replicas at the same moment, which no ledger check can catch.
 */
const handBackDelayMs = 1_000;
/** Pause before pulling again after a pull failed. */
const resumeDelayMs = 1_000;
/** Longest wait for NATS's answer before a stopping replica ends its open pull anyway (see endPull). */
const endPullWaitMs = 2_000;
/** How long one pull request waits for jobs on an idle stream. */
const fetchExpiresMs = 10_000;

/** A job this replica holds, and its delivery's end. */
interface Held extends HeldJob {
  done: Promise<void>;
}

type JobsConsumer = Awaited<ReturnType<JetStreamClient['consumers']['get']>>;
type Pull = Awaited<ReturnType<JobsConsumer['fetch']>>;

export class Mailer {
  readonly #deps: MailerDependencies;
  readonly #settings: MailerSettings;
  readonly #logger: Logger;
  readonly #consumer: JobsConsumer;
  readonly #delivery: JobDelivery;
  readonly #held = new Map<JsMsg, Held>();
  /** Stream sequences of the jobs held, so a second copy of one (see handBackDelayMs) is never worked on in parallel. */
  readonly #heldSeqs = new Set<number>();
  /** Held jobs waiting for their destination to have room: they leave their slot to jobs for other domains. */
  #waiting = 0;
  #stopping = false;
  #pull: Pull | undefined;
  /** Aborted when intake stops: cuts short the pause after a failed pull. */
  readonly #intake = new AbortController();
  /**
   * Settles when a held job is finished or intake stops, and is then replaced by a fresh one. The pull loop waits on it
   * for a free slot: racing the held jobs and a promise that only settles at shutdown instead would leave one reaction
   * on that promise for every job ever delivered.
   */
  #slotFreed = Promise.withResolvers<void>();
  /** A busy replica pulls again once this many slots are free (a quarter of them). */
  readonly #refillSlots: number;
  readonly #loop: Promise<void>;

  /** Starts pulling jobs from the mailers' durable consumer. */
  static async start(deps: MailerDependencies, settings: MailerSettings): Promise<Mailer> {
    return new Mailer(await deps.js.consumers.get(deps.names.jobsStream, deps.names.mailerConsumer), deps, settings);
  }

  private constructor(consumer: JobsConsumer, deps: MailerDependencies, settings: MailerSettings) {
    this.#deps = deps;
    this.#settings = settings;
    this.#logger = deps.logger;
    this.#consumer = consumer;
    this.#delivery = new JobDelivery(deps, settings);
    this.#refillSlots = Math.ceil(settings.concurrency / 4);
    this.#loop = this.#pullLoop();
  }

  /** Stops pulling jobs; those already held keep being delivered. */
  stopIntake(): void {
    if (this.#stopping) return;
    this.#stopping = true;
    this.#intake.abort();
    this.#wakeLoop();
    if (this.#pull) this.#endPull(this.#pull);
  }

  /** Resolves when every held job is settled. At the deadline, returns unfinished jobs to the queue for another replica. */
  async drain(deadlineMs: number): Promise<void> {
    this.stopIntake();
    const finished = (async () => {
      await this.#loop;
      await Promise.all([...this.#held.values()].map((entry) => entry.done));
    })();
    const timer = sleep(deadlineMs, 'deadline' as const, { ref: false });
    if ((await Promise.race([finished.then(() => 'finished' as const), timer])) === 'finished') return;
    let returned = 0;
    for (const [msg, entry] of this.#held) {
      if (entry.released) continue;
      entry.released = true;
      msg.nak(handBackDelayMs);
      returned += 1;
    }
    this.#logger.warn({ returned }, 'shutdown deadline reached; unfinished jobs returned to the queue');
    await this.#loop;
  }

  async #pullLoop(): Promise<void> {
    const { concurrency } = this.#settings;
    while (!this.#stopping) {
      await this.#waitForSlots();
      if (this.#stopping) break;
      try {
        const pull = await this.#consumer.fetch({ max_messages: concurrency - this.#delivering(), expires: fetchExpiresMs });
        this.#pull = pull;
        if (this.#stopping) this.#endPull(pull);
        for await (const msg of pull) {
          // A job that arrives as intake stops goes back for another replica.
          if (this.#stopping) msg.nak(handBackDelayMs);
          else this.#hold(msg);
        }
      } catch (error) {
        this.#logger.error({ err: error }, 'pulling delivery jobs failed; retrying');
        // Rejects only when intake stops, which ends the loop.
        await sleep(resumeDelayMs, undefined, { signal: this.#intake.signal }).catch(() => undefined);
      }
    }
  }

  async #waitForSlots(): Promise<void> {
    while (this.#settings.concurrency - this.#delivering() < this.#refillSlots && !this.#stopping) await this.#slotFreed.promise;
  }

  #delivering(): number {
    return this.#held.size - this.#waiting;
  }

  #wakeLoop(): void {
    this.#slotFreed.resolve();
    this.#slotFreed = Promise.withResolvers<void>();
  }

  #hold(msg: JsMsg): void {
    if (this.#heldSeqs.has(msg.seq)) {
      // The copy being delivered settles the job; this one is left alone (settling it would settle that one too).
      this.#logger.warn({ seq: msg.seq, deliveryCount: msg.info.deliveryCount }, 'second copy of a job this replica is delivering ignored');
      return;
    }
    this.#heldSeqs.add(msg.seq);
    const entry: Held = { msg, released: false, done: Promise.resolve(), waiting: (on) => this.#jobWaits(on) };
    this.#deps.metrics.inFlight.inc();
    // Tells the server the job is still being worked on, so a slow relay does not get it redelivered elsewhere.
    const heartbeat = setInterval(() => entry.released || msg.working(), Math.max(1_000, Math.floor(this.#settings.ackWaitMs / 3)));
    const span = startProcessSpan(
      {
        destination: msg.subject,
        messageId: msg.headers?.get('Nats-Msg-Id') || String(msg.seq),
        attributes: { 'messaging.consumer.group.name': this.#deps.names.mailerConsumer, 'messaging.nats.delivery_count': msg.info.deliveryCount },
      },
      carriedContext(msg.headers),
    );
    entry.done = this.#deliver(entry, span, heartbeat);
    this.#held.set(msg, entry);
  }

  /** Delivers a held job in its span; once it is settled (or crashed, and offered again), lets it go. */
  #deliver(entry: Held, span: Span, heartbeat: NodeJS.Timeout): Promise<void> {
    const { msg } = entry;
    return withActiveSpan(span, () => this.#delivery.deliver(entry, span))
      .catch(async (error: unknown) => {
        recordFailure(span, error);
        this.#logger.error({ err: error, seq: msg.seq }, 'delivery crashed; job will be retried');
        await this.#delivery.settle(entry, { action: 'nak', delayMs: eventFailureRetryMs });
      })
      .finally(() => {
        span.end();
        clearInterval(heartbeat);
        this.#held.delete(msg);
        this.#heldSeqs.delete(msg.seq);
        this.#deps.metrics.inFlight.dec();
        this.#wakeLoop();
      });
  }

  /** A held job starts or stops waiting for its destination: it leaves its slot to jobs for other domains meanwhile. */
  #jobWaits(on: boolean): void {
    this.#waiting += on ? 1 : -1;
    if (on) this.#wakeLoop();
  }

  /**
   * Ends an open pull once the server has answered a ping sent after intake stopped. Jobs it sent for the pull before
   * (on the wire, or read by the socket but not yet by this replica, as when the stop comes while it is busy) are then
   * received and handed back by the loop; ended at once, the pull's subscription would be gone when they arrive, and
   * each would wait out its ack wait on this replica before another got it. A job the server sends the pull during
   * that round trip itself can still miss it, and so can those on their way when NATS does not answer in time.
   */
  #endPull(pull: Pull): void {
    const answered = this.#deps.flush().then(
      () => true,
      () => false,
    );
    void Promise.race([answered, sleep(endPullWaitMs, false, { ref: false })]).then((inTime) => {
      if (!inTime) this.#logger.warn({ waitedMs: endPullWaitMs }, 'no answer from NATS before the open pull was ended');
      pull.stop();
    });
  }
}
