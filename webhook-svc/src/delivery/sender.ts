// The webhook sender: a durable pull consumer on NOTIFY_WEBHOOKS shared by every replica. Each message names one
// delivery (an event for an endpoint); the sender claims it in PostgreSQL, signs and posts the event's body, records the
// attempt, and then acks (delivered, or failed for good) or naks with the retry's delay (with jitter, or Retry-After).
// Each endpoint may hold only `endpointConcurrency` requests, all replicas together, and each project
// `projectConcurrency` of a replica's (fair-share.ts, Sender), so a slow or dead endpoint, or a project with many,
// cannot take every slot from the others.
import type { Logger } from '@notify/platform';
import type { Pool } from '@notify/platform/database';
import type { DataKey } from '@notify/platform/mail';
import {
  consumeDurably,
  type DurableConsumer,
  ensureConsumer,
  ensureStream,
  type JetStreamClient,
  type JetStreamManager,
  type JsMsg,
  type KV,
  nanoseconds,
  openBucket,
  presenceExpiryMs,
  type ReplicaCount,
} from '@notify/platform/nats';
import { readWebhookDelivery, schemaHeader, streamDeclarations, type Topology, type WebhookDelivery } from '@notify/proto';
import {
  type AttemptRecord,
  batchedStore,
  type Claim,
  type ClaimedDelivery,
  type DeliveryKey,
  type DeliveryStore,
  type EndpointChange,
  failDelivery,
} from './delivery-store.ts';
import { EndpointProjects } from './endpoint-projects.ts';
import { FairShare } from './fair-share.ts';
import type { AttemptResult, WebhookMetrics } from './metrics.ts';
import { createOutbound, type Outbound, type OutboundOptions, type OutboundResult } from './outbound.ts';
import { nextRetryDelay } from './schedule.ts';
import { signedHeaders, webhookId } from './signature.ts';
import { openSecrets } from './stored-secrets.ts';

/** Jobs out at once across all replicas: a delivery waiting out a retry delay (a delayed nak) stays pending on the server. */
export const maxAckPending = 100_000;

export function senderConsumerConfig(names: Topology, ackWaitMs: number) {
  return {
    durable_name: names.webhookConsumer,
    filter_subject: names.webhooksSubjects,
    ack_wait: nanoseconds(ackWaitMs),
    max_ack_pending: maxAckPending,
    max_deliver: -1,
  };
}

/** Declares the webhooks stream and the senders' consumer, and opens the bucket of the live replicas (`replicas`: NATS_STREAM_REPLICAS). */
export async function declareSenderJetStream(
  js: JetStreamClient,
  jsm: JetStreamManager,
  names: Topology,
  options: { ackWaitMs: number; replicas: number },
): Promise<KV> {
  await ensureStream(jsm, streamDeclarations(names).webhooks, options.replicas);
  await ensureConsumer(jsm, names.webhooksStream, senderConsumerConfig(names, options.ackWaitMs));
  return openBucket(js, jsm, names.webhookReplicasBucket, { ttlMs: 4 * presenceExpiryMs, replicas: options.replicas });
}

export interface SenderDeps {
  readonly js: JetStreamClient;
  readonly names: Topology;
  readonly pool: Pool;
  readonly metrics: WebhookMetrics;
  readonly logger: Logger;
  /** Opens the endpoints' sealed signing secrets. */
  readonly dataKey: DataKey;
  /** The live replicas and this one's rank, among which each endpoint's requests are shared (ReplicaPresence). */
  readonly replicas?: () => ReplicaCount;
}

export interface SenderSettings {
  /** Requests one replica makes at once. */
  readonly concurrency: number;
  /** The most requests one endpoint may have open, all replicas together. */
  readonly endpointConcurrency: number;
  /** Of those, the most one project's endpoints may hold together (fewer than `concurrency`). */
  readonly projectConcurrency: number;
  readonly outbound: OutboundOptions;
  /** Retry delays, in order (schedule.ts). */
  readonly schedule: readonly number[];
  /** An endpoint whose attempts all failed for this long is disabled (5 days). */
  readonly disableAfterMs: number;
  /** How long a claimed delivery is held for its attempt: the consumer's ack wait. */
  readonly leaseMs: number;
}

/** Delay before a delivery that could not be worked on (endpoint at its share, database down) is offered again. */
const busyDelayMs = (): number => 1_000 + Math.floor(Math.random() * 2_000);

/** Whether a response is the success the contract names: a 2xx (a 3xx is a failure and is not followed). */
const isSuccess = (status: number): boolean => status >= 200 && status < 300;

/** A delivery waiting for a request of its endpoint to finish, with when it started to wait. */
interface Parked {
  readonly message: JsMsg;
  readonly delivery: WebhookDelivery;
  readonly since: number;
}

/** A delivery a slot works on, and its claim when the slot's previous record made it. */
interface Turn {
  readonly parked: Parked;
  readonly claimed?: ClaimedDelivery;
}

/** One endpoint's share of a replica: requests open, deliveries waiting for one of them to end, and how long the latest took. */
interface EndpointShare {
  open: number;
  readonly parked: Parked[];
  /** How long each of the endpoint's latest deliveries held its slot, in ms, oldest first (at most `paceSamples`). */
  readonly slotTimesMs: number[];
}

/** Most deliveries one endpoint may have parked in a replica, however fast it answers. */
const maxParkedPerEndpoint = 4_096;

/** Most deliveries a replica holds parked for all endpoints together: what bounds its memory, however many there are. */
const maxParked = 4 * maxParkedPerEndpoint;

/**
 * An endpoint's pace is the shortest time one of its latest deliveries held a slot, of this many, and unknown until
 * that many have ended: the first requests of a replica (its connections and statements still to make, its code not
 * yet optimised) or a receiver's hiccup do not turn a burst back to the stream, and an endpoint that stops answering is
 * known slow once that many requests in a row were.
 */
const paceSamples = 16;

/** The endpoint's pace: the time a delivery holds one of its slots (see paceSamples). */
const paceOf = (share: EndpointShare): number | undefined => (share.slotTimesMs.length < paceSamples ? undefined : Math.min(...share.slotTimesMs));

/**
 * How many of an endpoint's deliveries may wait in this replica: as many as its slots get through in `waitMs` (how
 * long one may wait) when each holds one for `slotMs` (so a burst to a fast endpoint waits here, in order, instead of
 * being put back to come again seconds later), never fewer than `floor` (a slow endpoint: the rest go back to the
 * stream at once) and never more than `maxParkedPerEndpoint`, which is also the limit while its pace is not known
 * (`slotMs` undefined: a burst that finds the replica just started, or the endpoint idle until now; see paceSamples).
 */
export function parkLimit(slotMs: number | undefined, endpointConcurrency: number, floor: number, waitMs: number): number {
  if (slotMs === undefined) return maxParkedPerEndpoint;
  const atItsPace = Math.floor((waitMs * endpointConcurrency) / Math.max(slotMs, 1));
  return Math.min(maxParkedPerEndpoint, Math.max(floor, atItsPace));
}

/** How a slot's attempt ended for the JetStream message, and the delivery claimed with its record, if one was. */
type Settled = ({ settle: 'ack' } | { settle: 'nak'; delayMs: number }) & { next?: ClaimedDelivery };

/** What an attempt makes of its delivery: done on a 2xx, failed on a 410 or past the schedule, else pending a retry. */
function outcomeOf(schedule: readonly number[], attempt: number, response: OutboundResult): AttemptRecord['outcome'] {
  const status = response.kind === 'response' ? response.status : undefined;
  if (status !== undefined && isSuccess(status)) return { state: 'succeeded' };
  if (status === 410) return { state: 'failed' };
  const delay = nextRetryDelay(schedule, attempt, response.kind === 'response' ? { status: response.status, retryAfter: response.retryAfter } : {}, Date.now());
  return delay === undefined ? { state: 'failed' } : { state: 'pending', retryInMs: delay };
}

/**
 * Deliveries to an endpoint at its share are parked (see parkLimit), without holding a handler: each request of that
 * endpoint, once done, takes the next parked one, so a burst to a fast endpoint flows at the endpoint's pace while a
 * dead endpoint's deliveries are put back and leave the handlers to the others. A delivery whose project holds its
 * share is put back too: the project's own requests, as they end, take its endpoints' parked deliveries.
 */
export class Sender {
  readonly #deps: SenderDeps;
  readonly #settings: SenderSettings;
  readonly #shares = new Map<number, EndpointShare>();
  readonly #parkFloor: number;
  /**
   * A delivery parked longer than half its ack wait is put back when its turn comes (the replica stopping puts back all
   * of them): any longer and JetStream could offer it to another replica while it waits here. Those are a slow or dead
   * endpoint's, parked before its pace was known (parkLimit parks no more than the endpoint gets through in time).
   */
  readonly #parkMaxMs: number;
  #parkedInAll = 0;
  readonly #outbound: Outbound;
  readonly #store: DeliveryStore;
  readonly #projects: EndpointProjects;
  readonly #fairShare: FairShare;
  #stopping = false;
  readonly #consumer: DurableConsumer;

  /** Starts consuming the webhook deliveries. */
  static start(deps: SenderDeps, settings: SenderSettings): Sender {
    return new Sender(deps, settings);
  }

  private constructor(deps: SenderDeps, settings: SenderSettings) {
    this.#deps = deps;
    this.#settings = settings;
    this.#parkFloor = settings.endpointConcurrency * 8;
    this.#parkMaxMs = settings.leaseMs / 2;
    this.#outbound = createOutbound(settings.outbound);
    // Most deliveries one statement claims or records: the requests one replica may have open at once.
    this.#store = batchedStore(deps.pool, { maxBatch: settings.concurrency, leaseMs: settings.leaseMs, disableAfterMs: settings.disableAfterMs });
    this.#projects = new EndpointProjects(deps.pool, { maxBatch: settings.concurrency });
    this.#fairShare = new FairShare(settings, deps.replicas);
    this.#consumer = consumeDurably({
      js: deps.js,
      stream: deps.names.webhooksStream,
      consumer: deps.names.webhookConsumer,
      batchSize: 1,
      concurrency: settings.concurrency,
      logger: deps.logger,
      handle: async (messages) => {
        for (const message of messages) await this.#handleOne(message);
      },
    });
  }

  /** Stops pulling, hands parked deliveries back, finishes the open requests, then resolves. */
  async stop(): Promise<void> {
    this.#stopping = true;
    await this.#consumer.stop();
    // Parked deliveries whose endpoint had no request left open are handed back here.
    for (const share of this.#shares.values()) this.#nextParked(share);
    this.#outbound.close();
  }

  async #handleOne(message: JsMsg): Promise<void> {
    const read = readWebhookDelivery(message.data, message.headers?.get(schemaHeader) || undefined);
    if (!read.ok) {
      // It names nothing this release can find: offering it again would fail the same way.
      this.#deps.logger.error({ subject: message.subject, streamSequence: message.seq, reason: read.reason }, 'unreadable webhook delivery dropped');
      message.term();
      return;
    }
    const delivery = read.value;
    let projectId: number | undefined;
    try {
      projectId = await this.#projects.of(delivery.endpointId);
    } catch (error) {
      this.#notWorkedOn(message, delivery, error);
      return;
    }
    // Its endpoint was deleted, and the endpoint's deliveries with it: nothing is left to send.
    if (projectId === undefined) {
      message.ack();
      return;
    }
    const share = this.#shares.get(delivery.endpointId);
    const arrived: Parked = { message, delivery, since: Date.now() };
    const limit = this.#fairShare.endpointLimit(delivery.endpointId);
    // The endpoint's requests are the other replicas' to make: one of them takes it when it comes again.
    if (limit === 0) this.#putBack(message);
    else if (share && share.open >= limit) this.#parkOrPutBack(share, arrived);
    else if (!this.#fairShare.projectHasRoom(projectId)) {
      this.#deps.metrics.projectBusy.inc();
      message.nak(busyDelayMs());
    } else await this.#holdSlot(share ?? this.#newShare(delivery.endpointId), projectId, arrived);
  }

  /** Parks a delivery whose endpoint holds its share (see parkLimit), or puts it back when enough wait already. */
  #parkOrPutBack(share: EndpointShare, arrived: Parked): void {
    const limit = parkLimit(paceOf(share), this.#fairShare.endpointLimit(arrived.delivery.endpointId), this.#parkFloor, this.#parkMaxMs);
    if (share.parked.length < limit && this.#parkedInAll < maxParked && !this.#stopping) {
      this.#deps.metrics.endpointBusy.inc({ action: 'parked' });
      share.parked.push(arrived);
      this.#parkedInAll += 1;
    } else this.#putBack(arrived.message);
  }

  #newShare(endpointId: number): EndpointShare {
    const share: EndpointShare = { open: 0, parked: [], slotTimesMs: [] };
    this.#shares.set(endpointId, share);
    return share;
  }

  /** Works on the delivery, then on its endpoint's parked ones in turn, holding one slot of the endpoint and its project. */
  async #holdSlot(share: EndpointShare, projectId: number, first: Parked): Promise<void> {
    share.open += 1;
    this.#fairShare.take(projectId);
    try {
      for (let turn: Turn | undefined = { parked: first }; turn; ) turn = await this.#workTimed(share, turn);
    } finally {
      share.open -= 1;
      this.#fairShare.release(projectId);
      // Its last slot ended with deliveries parked: the endpoint's part of this replica went to 0 (a replica joined).
      if (share.open === 0) {
        const handedBack = share.parked.splice(0);
        this.#parkedInAll -= handedBack.length;
        for (const parked of handedBack) this.#putBack(parked.message);
        this.#shares.delete(first.delivery.endpointId);
      }
    }
  }

  /** Works on a delivery in one of its endpoint's slots, keeping the endpoint's pace. */
  async #workTimed(share: EndpointShare, turn: Turn): Promise<Turn | undefined> {
    const started = performance.now();
    const next = await this.#work(share, turn);
    const tookMs = performance.now() - started;
    share.slotTimesMs.push(tookMs);
    if (share.slotTimesMs.length > paceSamples) share.slotTimesMs.shift();
    return next;
  }

  /**
   * Works on a delivery, and says what the slot takes next: the endpoint's next parked delivery (taken while its record
   * is made, to be claimed with it), if one waits.
   */
  async #work(share: EndpointShare, turn: Turn): Promise<Turn | undefined> {
    const { message, delivery } = turn.parked;
    let next: Parked | undefined;
    const requestEnded = (response: OutboundResult): DeliveryKey | undefined => {
      this.#keepTimeoutRun(delivery.endpointId, response);
      next = this.#nextTurn(share, delivery.endpointId);
      return next?.delivery;
    };
    let claimedNext: ClaimedDelivery | undefined;
    try {
      const claim: Claim = turn.claimed ? { kind: 'claimed', delivery: turn.claimed } : await this.#store.claim(delivery);
      if (claim.kind === 'settled') message.ack();
      else if (claim.kind === 'endpoint_disabled') {
        await failDelivery(this.#deps.pool, delivery.eventId, delivery.endpointId);
        message.ack();
      } else if (claim.kind === 'later') message.nak(claim.inMs);
      else {
        const settled = await this.#attempt(delivery, claim.delivery, requestEnded);
        claimedNext = settled.next;
        if (settled.settle === 'ack') message.ack();
        else message.nak(settled.delayMs);
      }
    } catch (error) {
      // The database failed: the claim (if it was made) runs out and the delivery is attempted again.
      this.#notWorkedOn(message, delivery, error);
    }
    // Unclaimed (none was taken with the record, or the record could not claim it): it claims on its own.
    const taken: Parked | undefined = next ?? this.#nextTurn(share, delivery.endpointId);
    return taken && { parked: taken, ...(claimedNext ? { claimed: claimedNext } : {}) };
  }

  /**
   * One attempt, recorded. `requestEnded` is told how the request ended and hands over the delivery the slot takes next,
   * if one waits: it is claimed with the record (`next` of what this resolves to).
   */
  async #attempt(delivery: WebhookDelivery, claimed: ClaimedDelivery, requestEnded: (response: OutboundResult) => DeliveryKey | undefined): Promise<Settled> {
    const number = claimed.attempts + 1;
    const timestamp = Math.floor(Date.now() / 1_000);
    const headers = signedHeaders(openSecrets(this.#deps.dataKey, delivery.endpointId, claimed.secrets), webhookId(delivery.eventId), timestamp, claimed.body);
    const started = performance.now();
    this.#deps.metrics.inFlight.inc();
    const response = await this.#outbound.post(claimed.url, headers, claimed.body).finally(() => this.#deps.metrics.inFlight.dec());
    const latencyMs = Math.round(performance.now() - started);
    const status = response.kind === 'response' ? response.status : undefined;
    // A replayed delivery has the whole schedule again: its retries count from the replay.
    const outcome = outcomeOf(this.#settings.schedule, number - claimed.replayedAfter, response);
    const next = requestEnded(response);
    const record: AttemptRecord = {
      eventId: delivery.eventId,
      endpointId: delivery.endpointId,
      attempt: number,
      statusCode: status ?? null,
      latencyMs,
      responseBody: response.kind === 'response' ? response.body : null,
      error: response.kind === 'error' ? response.error : status !== undefined && !isSuccess(status) ? `HTTP ${status}` : null,
      outcome,
      gone: status === 410,
      ...(next ? { next } : {}),
    };
    const { change, next: claimedNext } = await this.#store.record(record);
    this.#report(record, response, change);
    const taken = claimedNext ? { next: claimedNext } : {};
    return outcome.state === 'pending' ? { settle: 'nak', delayMs: outcome.retryInMs, ...taken } : { settle: 'ack', ...taken };
  }

  /** An attempt recorded, in the metrics and the log; its endpoint disabled by it, said so. */
  #report(record: AttemptRecord, response: OutboundResult, change: EndpointChange): void {
    const { metrics, logger } = this.#deps;
    const { outcome, latencyMs } = record;
    const result: AttemptResult = outcome.state === 'pending' ? 'retrying' : outcome.state;
    metrics.attempts.inc({ result });
    metrics.latency.observe({ result }, latencyMs / 1_000);
    const context = { eventId: record.eventId, endpointId: record.endpointId, attempt: record.attempt, status: record.statusCode ?? undefined, latencyMs };
    if (change !== 'none') {
      metrics.endpointsDisabled.inc({ reason: change === 'disabled_gone' ? 'gone' : 'failing' });
      logger.warn({ ...context, reason: change }, 'webhook endpoint disabled');
    }
    const error = response.kind === 'error' ? response.error : undefined;
    if (outcome.state === 'pending') logger.info({ ...context, error, retryInMs: outcome.retryInMs }, 'webhook attempt failed; will retry');
    else if (outcome.state === 'failed') logger.warn({ ...context, error }, 'webhook delivery failed');
    else logger.debug(context, 'webhook delivered');
  }

  /** Hands a delivery back to JetStream, to be offered again in a few seconds, after a failure (logged). */
  #notWorkedOn(message: JsMsg, delivery: WebhookDelivery, error: unknown): void {
    this.#deps.logger.warn(
      { err: error, eventId: delivery.eventId, endpointId: delivery.endpointId },
      'webhook delivery not worked on; it will be offered again',
    );
    message.nak(busyDelayMs());
  }

  /** Keeps the endpoint's run of timeouts (fair-share.ts), and says so when it slows the endpoint down. */
  #keepTimeoutRun(endpointId: number, response: OutboundResult): void {
    if (!this.#fairShare.requestEnded(endpointId, response.kind === 'error' && response.timedOut === true)) return;
    this.#deps.metrics.endpointsSlowed.inc();
    this.#deps.logger.warn({ endpointId }, 'webhook endpoint timed out repeatedly; it may hold one request at a time until one ends otherwise');
  }

  /**
   * What a slot that just ended takes next: the endpoint's next parked delivery, unless the endpoint holds more slots
   * than it now may (slowed down while they were open): then the slot ends, and the last of them takes it.
   */
  #nextTurn(share: EndpointShare, endpointId: number): Parked | undefined {
    return share.open > this.#fairShare.endpointLimit(endpointId) ? undefined : this.#nextParked(share);
  }

  /** Hands a delivery back to JetStream, to be offered again in a few seconds: its endpoint is at its share. */
  #putBack(message: JsMsg): void {
    this.#deps.metrics.endpointBusy.inc({ action: 'put_back' });
    message.nak(busyDelayMs());
  }

  /** The next parked delivery still worth taking; the stale ones (and all of them while stopping) are put back. */
  #nextParked(share: EndpointShare): Parked | undefined {
    for (let next = share.parked.shift(); next; next = share.parked.shift()) {
      this.#parkedInAll -= 1;
      if (!this.#stopping && Date.now() - next.since <= this.#parkMaxMs) {
        // Its ack wait starts again: it may now take a whole request.
        next.message.working();
        return next;
      }
      this.#putBack(next.message);
    }
    return undefined;
  }
}
