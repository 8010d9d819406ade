// The durable pull consumer on the events stream: the DeliveryEvents received together (single events, and the batches
// a mailer publishes) are applied in one transaction and acked after its commit, so a crash between the two only
// redelivers events the store then sees as duplicates.
// Traces: the batch is one `process` span of its own, linked to every event's context (its database work is under it);
// each event gets a `process` span in its message's trace, a child of the mailer's span that published it.
import { type Context, contextFromTraceparent, type Logger, notifyAttributes, recordFailure, type Span, withActiveSpan } from '@notify/platform';
import type { Pool } from '@notify/platform/database';
import {
  carriedContext,
  consumeDurably,
  type DurableConsumer,
  deadLetter,
  ensureConsumer,
  type JetStreamClient,
  type JetStreamManager,
  type JsMsg,
  nanoseconds,
  startBatchProcessSpan,
  startProcessSpan,
} from '@notify/platform/nats';
import { type DeliveryEvent, deliveryEventId, readEventsMessage, schemaHeader, type Topology } from '@notify/proto';
import type { DispatchMetrics } from '../metrics.ts';
import { type Applied, applyDeliveryEvents } from './event-store.ts';

/**
 * An event not acked within this time is redelivered. One transaction, even of a full batch, takes milliseconds, and a
 * redelivered event is recorded once; the wait also bounds how long events pulled by a replica that crashed stay unapplied.
 */
const ackWaitMs = 10_000;
/** Delay before the events of a batch that failed for a dependency (database down) are offered again. */
const retryDelayMs = 2_000;
/**
 * How long a batch that is not full waits for more events before it is applied: a message's state may trail its
 * delivery by this much, and in exchange the events of a busy stream share a transaction (a mailer draining a backlog
 * of 4,000: about 0.15 commits per mail instead of 0.33 at 20 ms, PostgreSQL and dispatch-svc 0.17 ms of CPU less per
 * mail).
 */
const batchLingerMs = 100;

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
  /** Called after a batch that moved a message has committed: its webhook events are then ready to publish. */
  readonly afterCommit?: () => void;
}

/** Stops pulling, applies and acks the events already received, then resolves. */
export type EventConsumer = DurableConsumer;

interface Parsed {
  readonly message: JsMsg;
  readonly event: DeliveryEvent;
  readonly span: Span;
}

const logContext = (message: JsMsg) => ({ subject: message.subject, streamSequence: message.seq });

/**
 * A message no release of this reader can read, or a batch with events that cannot be read: redelivering it would fail
 * the same way, so its bytes go to the dead letters. False if even the dead letter could not be written: the message is
 * then offered again later (nothing vanishes), and none of its events is applied now.
 */
async function deadLetterEvents(deps: EventConsumerDeps, message: JsMsg, reason: string): Promise<boolean> {
  deps.logger.error({ ...logContext(message), reason }, 'unreadable delivery event dead-lettered');
  if (!(await deadLetter(deps.js, deps.names.deadLettersSubject('events'), message, reason))) {
    message.nak(retryDelayMs);
    return false;
  }
  deps.metrics.deliveryEvents.inc({ outcome: 'malformed' });
  return true;
}

/**
 * Reads each message (a single event or a mailer's batch), dead-letters what cannot be read, applies every readable
 * event in one transaction, then settles each message: acked once all of its events are stored. A message that is not
 * an event at all is terminated; a batch with some unreadable events is dead-lettered whole and its readable events
 * applied (a dead letter replayed later only repeats them, which the store sees as duplicates).
 */
async function handle(deps: EventConsumerDeps, messages: readonly JsMsg[]): Promise<void> {
  const received: Array<Omit<Parsed, 'span'> & { carried: Context }> = [];
  const settled: JsMsg[] = [];
  for (const message of messages) {
    const read = readEventsMessage(message.data, message.headers?.get(schemaHeader) || undefined);
    if (!read.ok) {
      // No reason text: servers before 2.10.4 do not recognise `+TERM <reason>` and would leave the event pending.
      if (await deadLetterEvents(deps, message, read.reason)) message.term();
      continue;
    }
    const unreadable = read.value.flatMap((event) => (event.ok ? [] : [event.reason]));
    if (unreadable.length > 0 && !(await deadLetterEvents(deps, message, unreadable.join('; ')))) continue;
    settled.push(message);
    const headerContext = carriedContext(message.headers);
    for (const event of read.value) {
      if (event.ok) received.push({ message, event: event.value, carried: event.traceparent ? contextFromTraceparent(event.traceparent) : headerContext });
    }
  }
  if (received.length === 0) {
    for (const message of settled) message.ack();
    return;
  }
  const batchSpan = startBatchProcessSpan(
    { destination: deps.names.eventsStream },
    received.map(({ carried }) => carried),
  );
  const parsed = received.map(({ message, event, carried }): Parsed => {
    const attributes = { [notifyAttributes.messageId]: event.messageId, [notifyAttributes.state]: event.state, [notifyAttributes.attempt]: event.attempt };
    const span = startProcessSpan({ destination: message.subject, messageId: deliveryEventId(event), attributes }, carried, [
      { context: batchSpan.spanContext() },
    ]);
    return { message, event, span };
  });
  try {
    await applyBatch(deps, parsed, settled, batchSpan);
  } finally {
    batchSpan.end();
    for (const { span } of parsed) span.end();
  }
}

async function applyBatch(deps: EventConsumerDeps, parsed: readonly Parsed[], messages: readonly JsMsg[], batchSpan: Span): Promise<void> {
  let applied: Applied<Parsed>[];
  try {
    applied = await withActiveSpan(batchSpan, () => applyDeliveryEvents(deps.pool, parsed));
  } catch (error) {
    // Nothing of the batch was committed: every event of it is offered again.
    recordFailure(batchSpan, error);
    for (const { message, event, span } of parsed) {
      recordFailure(span, error);
      deps.logger.warn({ ...logContext(message), err: error, messageId: event.messageId }, 'delivery event not stored; it will be redelivered');
    }
    for (const message of messages) message.nak(retryDelayMs);
    return;
  }
  if (applied.some(({ outcome }) => outcome === 'applied')) deps.afterCommit?.();
  for (const { message, event, span, outcome, suppressed } of applied) {
    const context = logContext(message);
    span.setAttribute(notifyAttributes.eventOutcome, outcome);
    deps.metrics.deliveryEvents.inc({ outcome });
    if (suppressed) deps.metrics.suppressions.inc({ reason: 'hard_bounce' });
    if (outcome === 'unknown_message') deps.logger.warn({ ...context, messageId: event.messageId }, 'delivery event for an unknown message dropped');
    else deps.logger.debug({ ...context, messageId: event.messageId, state: event.state, attempt: event.attempt, outcome }, 'delivery event stored');
  }
  for (const message of messages) message.ack();
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
