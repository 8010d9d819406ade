// Unary calls carried as the items of one batched call (DispatchService.SendMany carries Send calls): each item keeps
// what its own call would have had. Its trace: a client and a server span named as the gRPC instrumentation names a
// call's, the server's a child of the client's through the W3C trace context the item carries (the batched call itself
// is left untraced, telemetry.ts). Its failure: the status, reason and field messages its own call would have failed
// with, carried as the item's refusal and read back by the caller as the same RemoteError.
import { Metadata, status, type ServiceError } from '@grpc/grpc-js';
import { context, propagation, ROOT_CONTEXT, SpanKind, SpanStatusCode, trace, type Context, type Span } from '@opentelemetry/api';
import { errorMetadataKeys } from '../errors.ts';
import { RemoteError, type GrpcFailure } from './errors.ts';

/** The W3C trace context of one item, as its batched call carries it. */
export interface ItemTraceContext {
  readonly traceparent: string;
  readonly tracestate: string;
}

/** How one item failed: what its own call's status and trailers would have said. */
export interface ItemRefusal {
  readonly code: status;
  readonly reason: string;
  readonly fields: string[];
}

/** A method path (`/notify.dispatch.v1.DispatchService/Send`) as the instrumentation names its spans and attributes. */
function rpcNames(path: string): { name: string; service: string; method: string } {
  const [service = '', method = ''] = path.replace(/^\//, '').split('/');
  return { name: `grpc.${service}/${method}`, service, method };
}

/** One item's span of the call it stands for (`path`): a client span under the caller's context, or a server span under the item's carried one. */
export function startItemSpan(path: string, kind: SpanKind.CLIENT | SpanKind.SERVER, parent: Context): Span {
  const { name, service, method } = rpcNames(path);
  return trace.getTracer('@notify/platform').startSpan(name, { kind, attributes: { 'rpc.system': 'grpc', 'rpc.service': service, 'rpc.method': method } }, parent);
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
  return { traceparent: carrier['traceparent'] ?? '', tracestate: carrier['tracestate'] ?? '' };
}

/** The parent an item's server span continues, from the trace context it carried (the root context without one). */
export function contextOfItem(item: ItemTraceContext): Context {
  const carrier: Record<string, string> = item.tracestate === '' ? { traceparent: item.traceparent } : { traceparent: item.traceparent, tracestate: item.tracestate };
  return item.traceparent === '' ? ROOT_CONTEXT : propagation.extract(ROOT_CONTEXT, carrier);
}

/** A failure (toGrpcFailure's) as an item's refusal; without a reason trailer, RemoteError's own default. */
export function itemRefusal(failure: GrpcFailure): ItemRefusal {
  const reason = failure.metadata.get(errorMetadataKeys.reason)[0];
  const fields = failure.metadata.get(errorMetadataKeys.fields)[0];
  return {
    code: failure.code,
    reason: typeof reason === 'string' ? reason : (status[failure.code]?.toLowerCase() ?? 'unknown'),
    fields: typeof fields === 'string' ? (JSON.parse(fields) as string[]) : [],
  };
}

/** The RemoteError the item's own call would have rejected with; its details are not carried, its status and reason stand for them. */
export function remoteErrorOf(refusal: ItemRefusal): RemoteError {
  const details = `${status[refusal.code] ?? refusal.code}: ${refusal.reason}`;
  const metadata = new Metadata();
  metadata.set(errorMetadataKeys.reason, refusal.reason);
  if (refusal.fields.length > 0) metadata.set(errorMetadataKeys.fields, JSON.stringify(refusal.fields));
  return new RemoteError(Object.assign(new Error(details), { code: refusal.code, details, metadata }) as ServiceError);
}
