// A durable pull consumer worked by one handler, `concurrency` messages at a time, that resumes by itself after the
// subscription fails (NATS restarting, a stream leader moving) and stops cleanly for shutdown. The delivery events and
// the delivery-limit advisories (dead-letters/delivery-limit.ts) are both consumed this way.
import { setTimeout as sleep } from 'node:timers/promises';
import type { Logger } from '@notify/platform';
import type { JetStreamClient, JsMsg } from '@notify/platform/nats';

/** Pause before consuming again after the subscription itself failed. */
const resubscribeDelayMs = 1_000;

export interface DurableConsumerOptions {
  readonly js: JetStreamClient;
  readonly stream: string;
  readonly consumer: string;
  /** Messages handled at once. */
  readonly concurrency: number;
  readonly logger: Logger;
  /** Settles the message itself (ack, nak or term); a rejection is logged and the message left to its ack wait. */
  handle(message: JsMsg): Promise<void>;
}

export interface DurableConsumer {
  /** Stops pulling, lets the messages already received be handled, then resolves. */
  stop(): Promise<void>;
}

export function consumeDurably(options: DurableConsumerOptions): DurableConsumer {
  const stopped = new AbortController();
  let close: (() => Promise<unknown>) | undefined;

  async function consumeUntilClosed(): Promise<void> {
    const consumer = await options.js.consumers.get(options.stream, options.consumer);
    const messages = await consumer.consume({ max_messages: options.concurrency * 2 });
    close = () => messages.close();
    if (stopped.signal.aborted) await messages.close();
    const inFlight = new Set<Promise<void>>();
    try {
      for await (const message of messages) {
        const task: Promise<void> = options
          .handle(message)
          .catch((error: unknown) => options.logger.error({ err: error, stream: options.stream, seq: message.seq }, 'message handler failed; it will be redelivered'))
          .finally(() => inFlight.delete(task));
        inFlight.add(task);
        if (inFlight.size >= options.concurrency) await Promise.race(inFlight);
      }
    } finally {
      await Promise.all(inFlight);
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
