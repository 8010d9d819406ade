// A durable pull consumer worked by one handler, in batches of the messages received together, `concurrency` batches at
// a time, that resumes by itself after the subscription fails (NATS restarting, a stream leader moving) and stops
// cleanly for shutdown. dispatch-svc consumes the delivery events (in batches, one transaction each) and the
// delivery-limit advisories (one at a time) this way.
import { setTimeout as sleep } from 'node:timers/promises';
import type { JetStreamClient, JsMsg } from '@nats-io/jetstream';
import type { Logger } from '../logger.ts';

/** Pause before consuming again after the subscription itself failed. */
const resubscribeDelayMs = 1_000;
/**
 * Lifetime of each pull request. The server sends heartbeats every half of it, and two missed ones make the client
 * pull again: that is how a pull request lost with a consumer leader that died (a NATS node killed in a cluster, the
 * client connected to another node) is noticed. While the cluster elects the new leader the client's retries wait a
 * jittered 0.5-1.5 × this lifetime, so it bounds the pause after such a kill too: the client's default of 30 s held
 * events for 30 s and more, 10 s for 20 s (test/e2e/nats-cluster.test.ts); 2 s resumes as soon as a leader is elected,
 * for one pull request every 2 s from an idle consumer.
 */
const pullExpiresMs = 2_000;

export interface DurableConsumerOptions {
  readonly js: JetStreamClient;
  readonly stream: string;
  readonly consumer: string;
  /** Most messages handed to the handler at once. */
  readonly batchSize: number;
  /**
   * How long a batch that is not full waits for more messages before it starts (0: it is what has been received).
   * A few milliseconds let a steady trickle share one transaction instead of paying one each.
   */
  readonly lingerMs?: number;
  /** Batches handled at once. */
  readonly concurrency: number;
  readonly logger: Logger;
  /** Settles every message of the batch (ack, nak or term); a rejection is logged and the batch left to its ack wait. */
  handle(messages: readonly JsMsg[]): Promise<void>;
}

export interface DurableConsumer {
  /** Stops pulling, lets the messages already received be handled, then resolves. */
  stop(): Promise<void>;
}

export function consumeDurably(options: DurableConsumerOptions): DurableConsumer {
  const stopped = new AbortController();
  let close: (() => Promise<unknown>) | undefined;
  const running = (async () => {
    while (!stopped.signal.aborted) {
      try {
        await consumeUntilClosed(options, stopped.signal, (closer) => (close = closer));
      } catch (error) {
        if (stopped.signal.aborted) break;
        options.logger.warn({ err: error, stream: options.stream, consumer: options.consumer }, 'consumer interrupted; resuming');
        await sleep(resubscribeDelayMs, undefined, { signal: stopped.signal }).catch(() => undefined);
      }
    }
  })();

  return {
    async stop() {
      stopped.abort();
      await close?.();
      await running;
    },
  };
}

/** One subscription, consumed until it is closed (stopping) or fails; `opened` is given what closes it. */
async function consumeUntilClosed(options: DurableConsumerOptions, stopped: AbortSignal, opened: (close: () => Promise<unknown>) => void): Promise<void> {
  const batches = new Batches(options);
  const consumer = await options.js.consumers.get(options.stream, options.consumer);
  const messages = await consumer.consume({ max_messages: batches.inHand * 2, expires: pullExpiresMs });
  opened(() => messages.close());
  if (stopped.aborted) await messages.close();
  try {
    for await (const message of messages) {
      batches.add(message);
      // Pull no more while every handler is busy and their next batches are full: the rest waits in JetStream.
      while (batches.full()) await batches.oneEnded();
    }
  } finally {
    // Stopping (or the subscription failed): what was received is still handled.
    await batches.drain();
  }
}

/** The messages received and not yet handled, handed to the handler in batches, `concurrency` batches at a time. */
class Batches {
  /** Enough received messages to give every handler a full next batch while the current ones are handled. */
  readonly inHand: number;
  readonly #options: DurableConsumerOptions;
  readonly #received: JsMsg[] = [];
  readonly #inFlight = new Set<Promise<void>>();
  #startScheduled = false;

  constructor(options: DurableConsumerOptions) {
    this.#options = options;
    this.inHand = options.batchSize * options.concurrency;
  }

  /** A message received: a full batch starts at once, any other once the event loop turns (see scheduleStart). */
  add(message: JsMsg): void {
    this.#received.push(message);
    if (this.#received.length >= this.#options.batchSize) this.#start();
    this.#scheduleStart();
  }

  /** Whether, after starting what the free handlers can take, every handler is busy and their next batches are full. */
  full(): boolean {
    if (this.#received.length < this.inHand) return false;
    this.#start();
    return this.#received.length >= this.inHand;
  }

  /** Resolves when one of the batches being handled has ended. */
  oneEnded(): Promise<void> {
    return Promise.race(this.#inFlight);
  }

  /** Handles everything received, and resolves once every batch has ended. */
  async drain(): Promise<void> {
    while (this.#received.length > 0 || this.#inFlight.size > 0) {
      this.#start();
      await Promise.all(this.#inFlight);
    }
  }

  /** Hands what has been received to the free handlers, up to `batchSize` each. */
  #start(): void {
    const { batchSize, concurrency } = this.#options;
    while (this.#received.length > 0 && this.#inFlight.size < concurrency) {
      const batch = this.#received.splice(0, batchSize);
      const task: Promise<void> = this.#options
        .handle(batch)
        .catch((error: unknown) =>
          this.#options.logger.error(
            { err: error, stream: this.#options.stream, seqs: batch.map((message) => message.seq) },
            'message handler failed; its messages will be redelivered',
          ),
        )
        .finally(() => {
          this.#inFlight.delete(task);
          this.#scheduleStart();
        });
      this.#inFlight.add(task);
    }
  }

  /**
   * Messages that arrived together are yielded a microtask apart: a batch starts once the event loop turns, with all
   * of them, or after `lingerMs` when that is not a full batch (a full one starts at once, see add).
   */
  #scheduleStart(): void {
    if (this.#startScheduled) return;
    this.#startScheduled = true;
    const start = (): void => {
      this.#startScheduled = false;
      this.#start();
    };
    if (this.#options.lingerMs && this.#received.length < this.#options.batchSize) setTimeout(start, this.#options.lingerMs);
    else setImmediate(start);
  }
}
