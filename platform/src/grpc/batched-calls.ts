// Unary calls carried as the items of one batched call (DispatchService.SendMany carries Send calls, GetMessages
// GetMessage calls): each item keeps what its own call would have had. Its trace: a client and a server span named as
// the gRPC instrumentation names a call's, the server's a child of the client's through the W3C trace context the item
// carries (the batched call itself is left untraced, telemetry.ts). Its failure: the status, reason and field messages
// its own call would have failed with, carried as the item's refusal and read back by the caller as the same
// RemoteError. The caller's side is BatchedCalls, the server's itemServer.
import { Metadata, type ServiceError, status } from '@grpc/grpc-js';
import { type Context, context, propagation, ROOT_CONTEXT, type Span, SpanKind, SpanStatusCode, trace } from '@opentelemetry/api';
import { Batcher } from '../batcher.ts';
import { errorMetadataKeys, UserError } from '../errors.ts';
import type { Logger } from '../logger.ts';
import { Histogram, type Registry } from '../metrics.ts';
import { activeContext, withActiveSpan } from '../tracing.ts';
import { type GrpcFailure, type Refusal, RemoteError, toGrpcFailure } from './errors.ts';

/** The W3C trace context of one item, as its batched call carries it. */
export interface ItemTraceContext {
  readonly traceparent: string;
  readonly tracestate: string;
}

/** A method path (`/notify.dispatch.v1.DispatchService/Send`) as the instrumentation names its spans and attributes. */
function rpcNames(path: string): { name: string; service: string; method: string } {
  const [service = '', method = ''] = path.replace(/^\//, '').split('/');
  return { name: `grpc.${service}/${method}`, service, method };
}

/** One item's span of the call it stands for (`path`): a client span under the caller's context, or a server span under the item's carried one. */
export function startItemSpan(path: string, kind: SpanKind.CLIENT | SpanKind.SERVER, parent: Context): Span {
  const { name, service, method } = rpcNames(path);
  return trace
    .getTracer('@notify/platform')
    .startSpan(name, { kind, attributes: { 'rpc.system': 'grpc', 'rpc.service': service, 'rpc.method': method } }, parent);
}

/** Ends an item's span with the status its own call ended with, as the instrumentation ends a call's. */
export function endItemSpan(span: Span, code: status, message?: string): void {
  span.setAttribute('rpc.grpc.status_code', code);
  if (code !== status.OK) span.setStatus({ code: SpanStatusCode.ERROR, ...(message === undefined ? {} : { message }) });
  span.end();
}

/** The trace context an item carries so that its server span is a child of `span`. */
export function itemTraceContext(span: Span): ItemTraceContext {
  const carrier: Record<string, string> = {};
  propagation.inject(trace.setSpan(context.active(), span), carrier);
  return { traceparent: carrier.traceparent ?? '', tracestate: carrier.tracestate ?? '' };
}

/** The parent an item's server span continues, from the trace context it carried (the root context without one). */
export function contextOfItem(item: ItemTraceContext): Context {
  const carrier: Record<string, string> =
    item.tracestate === '' ? { traceparent: item.traceparent } : { traceparent: item.traceparent, tracestate: item.tracestate };
  return item.traceparent === '' ? ROOT_CONTEXT : propagation.extract(ROOT_CONTEXT, carrier);
}

/** A failure (toGrpcFailure's) as an item's refusal; without a reason trailer, RemoteError's own default. */
export function itemRefusal(failure: GrpcFailure): Refusal {
  const reason = failure.metadata.get(errorMetadataKeys.reason)[0];
  const fields = failure.metadata.get(errorMetadataKeys.fields)[0];
  return {
    code: failure.code,
    reason: typeof reason === 'string' ? reason : (status[failure.code]?.toLowerCase() ?? 'unknown'),
    fields: typeof fields === 'string' ? (JSON.parse(fields) as string[]) : [],
  };
}

/** The RemoteError the item's own call would have rejected with; its details are not carried, its status and reason stand for them. */
export function remoteErrorOf(refusal: Refusal): RemoteError {
  const details = `${status[refusal.code] ?? refusal.code}: ${refusal.reason}`;
  const metadata = new Metadata();
  metadata.set(errorMetadataKeys.reason, refusal.reason);
  if (refusal.fields.length > 0) metadata.set(errorMetadataKeys.fields, JSON.stringify(refusal.fields));
  return new RemoteError(Object.assign(new Error(details), { code: refusal.code, details, metadata }) as ServiceError);
}

/** What a batched call answers for one item: its own call's answer, or the refusal its own call would have failed with. */
export interface ItemOutcome<R> {
  readonly answer?: R | null;
  readonly refused?: Refusal | null;
}

/** Counts an item as a call of `path` with its status and time (GrpcServer.recordItem). */
export type RecordItem = (path: string, code: status, seconds: number) => void;

/** A batched call holds 1 to `max` items; anything else is refused as a whole, as a malformed request. */
export function checkItemCount(count: number, max: number, call: string): void {
  if (count >= 1 && count <= max) return;
  const fault = `items: must hold 1-${max} calls`;
  throw new UserError(status.INVALID_ARGUMENT, 'invalid_argument', `invalid ${call} request: ${fault}`, { fields: [fault] });
}

export interface ItemServerOptions<Q, R> {
  /** The path of the call each item stands for (`/notify.dispatch.v1.DispatchService/Send`). */
  readonly path: string;
  /** The item's field holding that call's request, named when it is missing. */
  readonly field: string;
  readonly handle: (request: Q) => Promise<R>;
  readonly logger: Logger;
  readonly recordItem: RecordItem;
}

/**
 * Serves one item of a batched call as a call of its own: through that call's handler, under a server span named as
 * its, in the trace the item carries, counted in the server's series. A failure answers the refusal the call would
 * have failed with, an unexpected one included (logged as the server logs a failed handler): it never fails the others.
 */
export function itemServer<Q, R>(options: ItemServerOptions<Q, R>): (request: Q | null | undefined, trace: ItemTraceContext) => Promise<ItemOutcome<R>> {
  const { path, field, handle, logger, recordItem } = options;
  return async (request, trace) => {
    const started = performance.now();
    const span = startItemSpan(path, SpanKind.SERVER, contextOfItem(trace));
    const ended = (code: status, details?: string): void => {
      endItemSpan(span, code, details);
      recordItem(path, code, (performance.now() - started) / 1000);
    };
    try {
      if (!request)
        throw new UserError(status.INVALID_ARGUMENT, 'invalid_argument', `invalid request: ${field}: is required`, { fields: [`${field}: is required`] });
      const answer = await withActiveSpan(span, () => handle(request));
      ended(status.OK);
      return { answer };
    } catch (error) {
      const failure = toGrpcFailure(error);
      if (failure.unexpected) logger.error({ err: error, method: path }, 'gRPC handler failed (an item of a batched call)');
      ended(failure.code, failure.details);
      return { refused: itemRefusal(failure) };
    }
  };
}

/** An item as the batched call carries it: its own call's request and its trace context. */
export interface CarriedItem<Q> {
  readonly request: Q;
  readonly trace: ItemTraceContext;
}

export interface BatchedCallsOptions<Q, R> {
  /** The path of the call each item stands for: its client span is named after it. */
  readonly path: string;
  /** Items per batched call at most. */
  readonly maxItems: number;
  /** Batched calls in flight at once. */
  readonly calls: number;
  /** Each item's own deadline (GRPC_DEADLINE), from the moment it was submitted. */
  readonly deadlineMs: number;
  /** The histogram of items per batched call: its name and help. */
  readonly itemsMetric: { readonly name: string; readonly help: string };
  readonly registry: Registry;
  /** One batched call: an outcome per item, in order. */
  readonly many: (items: readonly CarriedItem<Q>[], deadlineMs: number) => Promise<readonly ItemOutcome<R>[]>;
  /** One call of its own, for a server of a release without the batched call (UNIMPLEMENTED, during a rolling upgrade). */
  readonly single: (request: Q, deadlineMs: number) => Promise<R>;
}

interface Queued<Q> extends CarriedItem<Q> {
  /** Date.now() past which its own call would have failed. */
  readonly deadline: number;
  readonly span: Span;
}

type Settled<R> = PromiseSettledResult<R>;

function settledOf<R>(outcome: ItemOutcome<R> | undefined): Settled<R> {
  if (outcome?.answer) return { status: 'fulfilled', value: outcome.answer };
  if (outcome?.refused) return { status: 'rejected', reason: remoteErrorOf(outcome.refused) };
  return { status: 'rejected', reason: new Error('a batched call answered an item with no outcome') };
}

/**
 * A unary call whose calls travel together, gathered as the platform's Batcher gathers (no timer): alone, a call is a
 * batch of one; what arrives while `calls` batched calls are in flight goes in the next one. Each call keeps what its
 * own call had: its deadline (its time queued included), its answer or the very RemoteError it would have failed with
 * (a failure of the whole batched call is each item's), and its client span, the parent of the server's item span.
 */
export class BatchedCalls<Q, R> {
  readonly #options: BatchedCallsOptions<Q, R>;
  readonly #batcher: Batcher<Queued<Q>, R>;
  readonly #itemsPerCall: Histogram<string>;

  constructor(options: BatchedCallsOptions<Q, R>) {
    this.#options = options;
    this.#batcher = new Batcher({ maxBatchSize: options.maxItems, concurrency: options.calls, run: (items) => this.#call(items) });
    this.#itemsPerCall = new Histogram({ ...options.itemsMetric, buckets: [1, 2, 4, 8, 16, 32, 64, 128, 256, 500], registers: [options.registry] });
  }

  /**
   * Resolves with the call's answer, or rejects with the RemoteError a call of its own would have rejected with. A
   * queued call waits only for batched calls in flight, each bound by the deadline of an item queued before it: it
   * leaves by its own deadline, with what is left of it.
   */
  async call(request: Q): Promise<R> {
    const span = startItemSpan(this.#options.path, SpanKind.CLIENT, activeContext());
    try {
      const answer = await this.#batcher.submit({ request, deadline: Date.now() + this.#options.deadlineMs, span, trace: itemTraceContext(span) });
      endItemSpan(span, status.OK);
      return answer;
    } catch (error) {
      endItemSpan(span, error instanceof RemoteError ? error.status : status.UNKNOWN, error instanceof Error ? error.message : String(error));
      throw error;
    }
  }

  /** One batched call for `items`, whose deadline is the first one's (the earliest: they queued in order). */
  async #call(items: readonly Queued<Q>[]): Promise<Settled<R>[]> {
    this.#itemsPerCall.observe(items.length);
    const first = items[0] as Queued<Q>;
    try {
      const outcomes = await this.#options.many(items, first.deadline - Date.now());
      return items.map((_, index) => settledOf(outcomes[index]));
    } catch (error) {
      if (!(error instanceof RemoteError && error.status === status.UNIMPLEMENTED)) throw error;
      return Promise.allSettled(items.map((item) => withActiveSpan(item.span, () => this.#options.single(item.request, item.deadline - Date.now()))));
    }
  }
}
