// Notify's own spans and the W3C trace context they are carried in where no instrumentation carries it: the message row
// (which outlives the request that accepted it) and NATS headers (nats/trace-context.ts). Without a collector the
// spans are non-recording (telemetry.ts) but the trace ids still travel, so logs and the panel can name a message's trace.
import { randomFillSync } from 'node:crypto';
import type { RequestListener } from 'node:http';
import {
  type Attributes,
  type Context,
  context,
  type Link,
  ROOT_CONTEXT,
  type Span,
  type SpanKind,
  SpanStatusCode,
  TraceFlags,
  trace,
} from '@opentelemetry/api';
import { getRPCMetadata, parseTraceParent, TRACE_PARENT_HEADER } from '@opentelemetry/core';

export { type Attributes, type Context, type Link, type Span, SpanKind, SpanStatusCode } from '@opentelemetry/api';

/** Attribute names of Notify's own spans, beside OpenTelemetry's semantic conventions. */
export const notifyAttributes = {
  /** On every span that concerns one message, so a backend can find a message's spans by its id. */
  messageId: 'notify.message.id',
  /** The delivery attempt a mailer span belongs to (1 for the first). */
  attempt: 'notify.delivery.attempt',
  /** The state a delivery attempt ended in, or a delivery event carries: sending, deferred, sent, failed. */
  state: 'notify.delivery.state',
  /** What applying a delivery event did (applied, recorded, duplicate, unknown_message). */
  eventOutcome: 'notify.event.outcome',
  smtpReplyCode: 'notify.smtp.reply_code',
  /** RFC 3463 enhanced status code of the reply, such as 5.1.1, when the relay sent one. */
  smtpEnhancedStatus: 'notify.smtp.enhanced_status',
  smtpReply: 'notify.smtp.reply',
} as const;

const tracerName = '@notify/platform';

export function notifyTracer() {
  return trace.getTracer(tracerName);
}

export interface SpanStart {
  readonly kind?: SpanKind;
  readonly attributes?: Attributes;
  readonly links?: Link[];
  /** The span's parent; the active context when absent. */
  readonly parent?: Context;
}

export function startSpan(name: string, options: SpanStart = {}): Span {
  const { parent, ...spanOptions } = options;
  const parentContext = parent ?? context.active();
  const parentSpan = trace.getSpan(parentContext);
  // No sampler the SDK offers records the child of a span of this process that it did not record (the parent-based
  // ones follow the parent, a ratio decides by the trace id they share, always-off records nothing), so without a
  // collector the parent's own context stands in for every child: no span id, attribute copy or sampling per span on
  // the mailer's per-mail path. A remote parent (a message's carried context) is left to the sampler.
  if (parentSpan && !parentSpan.isRecording() && !parentSpan.spanContext().isRemote) return trace.wrapSpanContext(parentSpan.spanContext());
  return notifyTracer().startSpan(name, spanOptions, parentContext);
}

/** Runs `work` inside a new span, active for whatever it starts; ends it, recording a thrown error. */
export async function inSpan<T>(name: string, options: SpanStart, work: (span: Span) => Promise<T>): Promise<T> {
  const span = startSpan(name, options);
  try {
    return await context.with(trace.setSpan(options.parent ?? context.active(), span), () => work(span));
  } catch (error) {
    recordFailure(span, error);
    throw error;
  } finally {
    span.end();
  }
}

/** The context active now: to keep a caller's trace across work done later in a shared batch. */
export function activeContext(): Context {
  return context.active();
}

/**
 * Adds attributes to the span of the request being served: the HTTP server span (which the HTTP instrumentation
 * keeps in the context, under the spans Koa makes per middleware), else the active span (a gRPC handler's).
 */
export function annotateRequestSpan(attributes: Attributes): void {
  (getRPCMetadata(context.active())?.span ?? trace.getActiveSpan())?.setAttributes(attributes);
}

/** Runs `work` with `span` active, so the spans (and log lines) it causes belong to it. */
export function withActiveSpan<T>(span: Span, work: () => T): T {
  return context.with(trace.setSpan(context.active(), span), work);
}

export function recordFailure(span: Span, error: unknown): void {
  if (!span.isRecording()) return;
  span.recordException(error instanceof Error ? error : String(error));
  span.setStatus({ code: SpanStatusCode.ERROR, message: error instanceof Error ? error.message : String(error) });
}

/**
 * The W3C `traceparent` of a span (or of the active context's span): what is stored with a message so that work done
 * later, in another process, joins its trace. Empty when there is no valid span context.
 */
export function traceparentOf(source: Span | Context = context.active()): string {
  const spanContext = 'spanContext' in source ? source.spanContext() : trace.getSpanContext(source);
  if (!spanContext || !trace.isSpanContextValid(spanContext)) return '';
  const flags = (spanContext.traceFlags & 0xff).toString(16).padStart(2, '0');
  return `00-${spanContext.traceId}-${spanContext.spanId}-${flags}`;
}

/** A context whose parent is the span a stored `traceparent` names (the root context for an empty or invalid one). */
export function contextFromTraceparent(traceparent: string | null | undefined): Context {
  const spanContext = traceparent ? parseTraceParent(traceparent) : null;
  return spanContext ? trace.setSpanContext(ROOT_CONTEXT, { ...spanContext, isRemote: true }) : ROOT_CONTEXT;
}

/** Random bytes for trace and span ids, drawn 24 at a time from a pool: a `randomBytes` call of its own costs 5 µs. */
const idPool = Buffer.alloc(24 * 512);
let idPoolUsed = idPool.length;

/** 48 random hex digits: a trace id (32) and a span id (16). */
function randomIds(): string {
  if (idPoolUsed === idPool.length) {
    randomFillSync(idPool);
    idPoolUsed = 0;
  }
  idPoolUsed += 24;
  return idPool.toString('hex', idPoolUsed - 24, idPoolUsed);
}

/**
 * Serves each request in a trace: the HTTP server span the instrumentation made for it when spans are recorded (a
 * collector is set, telemetry.ts), else a span that is not recorded, in the trace the caller's `traceparent` names or
 * in a new one. Only its ids are made: an HTTP server spent 79-83 µs of CPU a request with the instrumentation's own
 * non-recording span, 46-48 µs with this and 38-39 µs with neither (one process, 20,000 requests over 8 kept-alive
 * connections). Its log lines and the calls it makes carry the trace either way.
 */
export function tracedRequests(listener: RequestListener): RequestListener {
  return (request, response) => {
    if (trace.getSpan(context.active())) return listener(request, response);
    const ids = randomIds();
    const header = request.headers[TRACE_PARENT_HEADER];
    const caller = typeof header === 'string' ? parseTraceParent(header) : null;
    // As the SDK makes it without a collector: the caller's trace, a span id of its own, not sampled.
    const span = trace.wrapSpanContext({ traceId: caller?.traceId ?? ids.slice(0, 32), spanId: ids.slice(32), traceFlags: TraceFlags.NONE });
    return context.with(trace.setSpan(ROOT_CONTEXT, span), () => listener(request, response));
  };
}

/** The trace id a stored `traceparent` names, or null. */
export function traceIdOf(traceparent: string | null | undefined): string | null {
  return (traceparent ? parseTraceParent(traceparent)?.traceId : undefined) ?? null;
}

/** A link to the span a `traceparent` names, if it names one. */
export function linkTo(traceparent: string | null | undefined, attributes?: Attributes): Link[] {
  const spanContext = trace.getSpanContext(contextFromTraceparent(traceparent));
  return spanContext ? [{ context: spanContext, ...(attributes ? { attributes } : {}) }] : [];
}

export const traceparentHeader = TRACE_PARENT_HEADER;
