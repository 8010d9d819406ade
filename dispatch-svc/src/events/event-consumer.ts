// The durable pull consumer on the events stream: each DeliveryEvent is applied in its own transaction and acked
// after commit, so a crash between the two only redelivers an event the store then sees as a duplicate.
import type { Logger } from '@notify/platform';
import type { Pool } from '@notify/platform/database';
import type { DeliveryEvent } from '@notify/proto';
import { ensureConsumer, nanoseconds, type JetStreamClient, type JetStreamManager, type JsMsg, type Topology } from '@notify/platform/nats';
import type { DispatchMetrics } from '../metrics.ts';
import { MalformedEventError, parseDeliveryEvent } from './delivery-event.ts';
import { consumeDurably, type DurableConsumer } from './durable-consumer.ts';
import { applyDeliveryEvent } from './event-store.ts';

/**
 * An event not acked within this time is redelivered. One transaction takes milliseconds, and a redelivered event is
 * recorded once; the wait also bounds how long events pulled by a replica that crashed stay unapplied.
 */
const ackWaitMs = 10_000;
/** Delay before an event that failed for a dependency (database down) is offered again. */
const retryDelayMs = 2_000;

export async function ensureEventsConsumer(jsm: JetStreamManager, names: Topology): Promise<void> {
  await ensureConsumer(jsm, names.eventsStream, { durable_name: names.eventsConsumer, ack_wait: nanoseconds(ackWaitMs), max_deliver: -1 });
}

export interface EventConsumerDeps {
  readonly js: JetStreamClient;
  readonly names: Topology;
  readonly pool: Pool;
  readonly metrics: DispatchMetrics;
  readonly logger: Logger;
  /** Events applied at once. Events of one message serialise on its row lock, so any order is safe. */
  readonly concurrency: number;
}

/** Stops pulling, applies and acks the events already received, then resolves. */
export type EventConsumer = DurableConsumer;

async function handle(deps: EventConsumerDeps, message: JsMsg): Promise<void> {
  const context = { subject: message.subject, streamSequence: message.seq };
  let event: DeliveryEvent;
  try {
    event = parseDeliveryEvent(message.data);
  } catch (error) {
    if (!(error instanceof MalformedEventError)) throw error;
    deps.metrics.deliveryEvents.inc({ outcome: 'malformed' });
    deps.logger.error({ ...context, err: error }, 'malformed delivery event terminated');
    // No reason text: servers before 2.10.4 do not recognise `+TERM <reason>` and would leave the event pending.
    message.term();
    return;
  }
  try {
    const outcome = await applyDeliveryEvent(deps.pool, event);
    deps.metrics.deliveryEvents.inc({ outcome });
    if (outcome === 'unknown_message') deps.logger.warn({ ...context, messageId: event.messageId }, 'delivery event for an unknown message dropped');
    else deps.logger.debug({ ...context, messageId: event.messageId, state: event.state, attempt: event.attempt, outcome }, 'delivery event stored');
    message.ack();
  } catch (error) {
    deps.logger.warn({ ...context, err: error, messageId: event.messageId }, 'delivery event not stored; it will be redelivered');
    message.nak(retryDelayMs);
  }
}

export function startEventConsumer(deps: EventConsumerDeps): EventConsumer {
  return consumeDurably({
    js: deps.js,
    stream: deps.names.eventsStream,
    consumer: deps.names.eventsConsumer,
    concurrency: deps.concurrency,
    logger: deps.logger,
    handle: (message) => handle(deps, message),
  });
}
