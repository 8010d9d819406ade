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
  /** Enough received messages to give every handler a full next batch while the current ones are handled. */
  const inHand = options.batchSize * options.concurrency;

  async function consumeUntilClosed(): Promise<void> {
    const consumer = await options.js.consumers.get(options.stream, options.consumer);
    const messages = await consumer.consume({ max_messages: inHand * 2, expires: pullExpiresMs });
    close = () => messages.close();
    if (stopped.signal.aborted) await messages.close();
    const received: JsMsg[] = [];
    const inFlight = new Set<Promise<void>>();
    let startScheduled = false;

    /** Hands what has been received to the free handlers, up to `batchSize` each. */
    const startBatches = (): void => {
      while (received.length > 0 && inFlight.size < options.concurrency) {
        const batch = received.splice(0, options.batchSize);
        const task: Promise<void> = options
          .handle(batch)
          .catch((error: unknown) =>
            options.logger.error({ err: error, stream: options.stream, seqs: batch.map((message) => message.seq) }, 'message handler failed; its messages will be redelivered'),
          )
          .finally(() => {
            inFlight.delete(task);
            scheduleStart();
          });
        inFlight.add(task);
      }
    };
    /**
     * Messages that arrived together are yielded a microtask apart: a batch starts once the event loop turns, with all
     * of them, or after `lingerMs` when that is not a full batch (a full one starts at once, see the loop below).
     */
    const scheduleStart = (): void => {
      if (startScheduled) return;
      startScheduled = true;
      const start = (): void => {
        startScheduled = false;
        startBatches();
      };
      if (options.lingerMs && received.length < options.batchSize) setTimeout(start, options.lingerMs);
      else setImmediate(start);
    };

    try {
      for await (const message of messages) {
        received.push(message);
        if (received.length >= options.batchSize) startBatches();
        scheduleStart();
        // Pull no more while every handler is busy and their next batches are full: the rest waits in JetStream.
        while (received.length >= inHand) {
          startBatches();
          if (received.length >= inHand) await Promise.race(inFlight);
        }
      }
    } finally {
      // Stopping (or the subscription failed): what was received is still handled.
      while (received.length > 0 || inFlight.size > 0) {
        startBatches();
        await Promise.all(inFlight);
      }
    }
  }

  const running = (async () => {
    while (!stopped.signal.aborted) {
      try {
        await consumeUntilClosed();
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
