// Trace context across NATS, which has no OpenTelemetry instrumentation of its own: the W3C `traceparent` travels in
// the message's headers, and the spans around publishing and processing follow the OpenTelemetry semantic conventions
// for messaging (messaging.system=nats, destination, message id, operation name and type, producer/consumer kinds).
import type { JetStreamClient, JetStreamPublishOptions, PubAck } from '@nats-io/jetstream';
import type { MsgHdrs } from '@nats-io/transport-node';
import type { WireMessage } from '@notify/proto';
import { trace } from '@opentelemetry/api';
import {
  type Attributes,
  type Context,
  contextFromTraceparent,
  type Link,
  recordFailure,
  type Span,
  SpanKind,
  startSpan,
  traceparentHeader,
  traceparentOf,
} from '../tracing.ts';
import { schemaHeaders } from './wire.ts';

/**
 * What publishes to JetStream and waits for the stream's acknowledgement: the connection's JetStreamClient (or a test's
 * wrapper of one). nats.js's own requests throughout: gathering their replies on one inbox subscription of our own saved
 * 0.12-0.20 ms of client CPU per message (its job, two events, the ledger's read and write, the double ack), 2-3 % of a
 * message's CPU and inside the spread of `npm run bench`, short of the 5 % a layer of our own over the client must save.
 */
export type JetStreamPublisher = Pick<JetStreamClient, 'publish'>;

/** What the messaging spans are about: where the message goes, and the id JetStream de-duplicates it by. */
export interface MessagingTarget {
  /** The subject published to, or the stream a batch is consumed from. */
  readonly destination: string;
  /** Nats-Msg-Id, when the message has one. */
  readonly messageId?: string;
  /** Attributes of Notify's own (notify.message.id and the like). */
  readonly attributes?: Attributes;
}

type Operation = 'create' | 'send' | 'receive' | 'process';

function messagingAttributes(operation: Operation, target: MessagingTarget): Attributes {
  return {
    'messaging.system': 'nats',
    'messaging.operation.name': operation,
    'messaging.operation.type': operation,
    'messaging.destination.name': target.destination,
    ...(target.messageId === undefined ? {} : { 'messaging.message.id': target.messageId }),
    ...target.attributes,
  };
}

/**
 * `create <destination>`: the message is made, and its context is what travels with it. Used where a message is
 * written down (the outbox) before it is published, perhaps much later and by another process.
 */
export function startCreateSpan(target: MessagingTarget, parent?: Context, links?: Link[]): Span {
  return startSpan(`create ${target.destination}`, {
    kind: SpanKind.PRODUCER,
    attributes: messagingAttributes('create', target),
    ...(parent ? { parent } : {}),
    ...(links ? { links } : {}),
  });
}

/**
 * `send <destination>`: one publish. A producer span when it is also where the message's context starts; a client
 * span when a create span made that context earlier (`created`), as the conventions ask.
 */
export function startSendSpan(target: MessagingTarget, options: { parent?: Context; created?: boolean } = {}): Span {
  return startSpan(`send ${target.destination}`, {
    kind: options.created ? SpanKind.CLIENT : SpanKind.PRODUCER,
    attributes: messagingAttributes('send', target),
    ...(options.parent ? { parent: options.parent } : {}),
  });
}

/** `process <destination>`: the work done for one received message, a child of the context it carries. */
export function startProcessSpan(target: MessagingTarget, carried: Context, links?: Link[]): Span {
  return startSpan(`process ${target.destination}`, {
    kind: SpanKind.CONSUMER,
    attributes: messagingAttributes('process', target),
    parent: carried,
    ...(links ? { links } : {}),
  });
}

/**
 * `process <stream>` for a batch of received messages handled together: its own trace, linked to the context of every
 * message it serves (a batch serves many traces, so it can be the child of none).
 */
export function startBatchProcessSpan(target: MessagingTarget, carried: readonly Context[]): Span {
  const links = carried.flatMap((each) => {
    const spanContext = trace.getSpanContext(each);
    return spanContext ? [{ context: spanContext }] : [];
  });
  return startSpan(`process ${target.destination}`, {
    kind: SpanKind.CONSUMER,
    attributes: { ...messagingAttributes('process', target), 'messaging.batch.message_count': carried.length },
    links,
  });
}

/**
 * Publishes to JetStream inside a `send` span. Without `created`, the span is the producer and the message carries its
 * context; with it (the `traceparent` of the message's create span, stored beside the message), the span is a child
 * of that creation and the message carries the creation's context, whoever publishes it and however late.
 */
export async function publishTraced(
  publisher: JetStreamPublisher,
  subject: string,
  message: WireMessage,
  options: Omit<Partial<JetStreamPublishOptions>, 'headers' | 'msgID'> & { readonly msgID: string },
  trace: { attributes?: Attributes; created?: string },
): Promise<PubAck> {
  const target = { destination: subject, messageId: options.msgID, ...(trace.attributes ? { attributes: trace.attributes } : {}) };
  const span = trace.created === undefined ? startSendSpan(target) : startSendSpan(target, { parent: contextFromTraceparent(trace.created), created: true });
  try {
    const headers = schemaHeaders(message);
    const traceparent = trace.created ?? traceparentOf(span);
    if (traceparent) headers.set(traceparentHeader, traceparent);
    const ack = await publisher.publish(subject, message.bytes, { ...options, headers });
    if (ack.duplicate) span.setAttribute('messaging.nats.duplicate', true);
    return ack;
  } catch (error) {
    recordFailure(span, error);
    throw error;
  } finally {
    span.end();
  }
}

/** The context a received message carries (the root context when it carries none, or an invalid one). */
export function carriedContext(headers: MsgHdrs | undefined): Context {
  return contextFromTraceparent(headers?.get(traceparentHeader));
}
