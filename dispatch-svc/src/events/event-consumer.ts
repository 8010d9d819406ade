// The durable pull consumer on the events stream: the DeliveryEvents received together are applied in one transaction
// and acked after its commit, so a crash between the two only redelivers events the store then sees as duplicates.
import type { Logger } from '@notify/platform';
import type { Pool } from '@notify/platform/database';
import type { DeliveryEvent } from '@notify/proto';
import { ensureConsumer, nanoseconds, type JetStreamClient, type JetStreamManager, type JsMsg, type Topology } from '@notify/platform/nats';
import type { DispatchMetrics } from '../metrics.ts';
import { MalformedEventError, parseDeliveryEvent } from './delivery-event.ts';
import { consumeDurably, type DurableConsumer } from './durable-consumer.ts';
import { applyDeliveryEvents, type Applied } from './event-store.ts';

/**
 * An event not acked within this time is redelivered. One transaction, even of a full batch, takes milliseconds, and a
 * redelivered event is recorded once; the wait also bounds how long events pulled by a replica that crashed stay unapplied.
 */
const ackWaitMs = 10_000;
/** Delay before the events of a batch that failed for a dependency (database down) are offered again. */
const retryDelayMs = 2_000;
/** How long a batch that is not full waits for more events before it is applied. */
const batchLingerMs = 20;

export async function ensureEventsConsumer(jsm: JetStreamManager, names: Topology): Promise<void> {
  await ensureConsumer(jsm, names.eventsStream, { durable_name: names.eventsConsumer, ack_wait: nanoseconds(ackWaitMs), max_deliver: -1 });
}

export interface EventConsumerDeps {
  readonly js: JetStreamClient;
  readonly names: Topology;
  readonly pool: Pool;
  readonly metrics: DispatchMetrics;
  readonly logger: Logger;
  /**
   * The most events one batch, one transaction, holds. A replica applies one batch at a time, so the events received
   * while it commits make up the next one, and a batch that is not full waits `batchLingerMs` for more: batches grow
   * with the traffic. Replicas lock the messages of their batches in id order, so any interleaving is safe.
   */
  readonly maxBatchSize: number;
}

/** Stops pulling, applies and acks the events already received, then resolves. */
export type EventConsumer = DurableConsumer;

interface Parsed {
  readonly message: JsMsg;
  readonly event: DeliveryEvent;
}

const logContext = (message: JsMsg) => ({ subject: message.subject, streamSequence: message.seq });

/** Terminates the malformed events one by one, applies the others in one transaction, then settles each of them. */
async function handle(deps: EventConsumerDeps, messages: readonly JsMsg[]): Promise<void> {
  const parsed: Parsed[] = [];
  for (const message of messages) {
    try {
      parsed.push({ message, event: parseDeliveryEvent(message.data) });
    } catch (error) {
      if (!(error instanceof MalformedEventError)) throw error;
      deps.metrics.deliveryEvents.inc({ outcome: 'malformed' });
      deps.logger.error({ ...logContext(message), err: error }, 'malformed delivery event terminated');
      // No reason text: servers before 2.10.4 do not recognise `+TERM <reason>` and would leave the event pending.
      message.term();
    }
  }
  if (parsed.length === 0) return;
  let applied: Applied<Parsed>[];
  try {
    applied = await applyDeliveryEvents(deps.pool, parsed);
  } catch (error) {
    // Nothing of the batch was committed: every event of it is offered again.
    for (const { message, event } of parsed) {
      deps.logger.warn({ ...logContext(message), err: error, messageId: event.messageId }, 'delivery event not stored; it will be redelivered');
      message.nak(retryDelayMs);
    }
    return;
  }
  for (const { message, event, outcome } of applied) {
    const context = logContext(message);
    deps.metrics.deliveryEvents.inc({ outcome });
    if (outcome === 'unknown_message') deps.logger.warn({ ...context, messageId: event.messageId }, 'delivery event for an unknown message dropped');
    else deps.logger.debug({ ...context, messageId: event.messageId, state: event.state, attempt: event.attempt, outcome }, 'delivery event stored');
    message.ack();
  }
}

export function startEventConsumer(deps: EventConsumerDeps): EventConsumer {
  return consumeDurably({
    js: deps.js,
    stream: deps.names.eventsStream,
    consumer: deps.names.eventsConsumer,
    batchSize: deps.maxBatchSize,
    // A message's state may trail its delivery by this much; in exchange a busy stream's events share transactions.
    lingerMs: batchLingerMs,
    concurrency: 1,
    logger: deps.logger,
    handle: (messages) => handle(deps, messages),
  });
}
