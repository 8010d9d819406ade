// An OTLP/HTTP trace receiver for tests and the benchmark: what a collector would receive from the services. Requests
// are decoded with OpenTelemetry's own protobuf definitions (the generated root of @opentelemetry/otlp-transformer
// 0.203, the last release that ships it), JSON ones with JSON.parse; every span is kept in a flat form.
import { createServer, type Server } from 'node:http';
import { createRequire } from 'node:module';
import type { AddressInfo } from 'node:net';

interface AnyValue {
  stringValue?: string | null;
  boolValue?: boolean | null;
  intValue?: number | string | { toString(): string } | null;
  doubleValue?: number | null;
}
interface KeyValue {
  key: string;
  value?: AnyValue | null;
}
interface OtlpSpan {
  traceId: Uint8Array | string;
  spanId: Uint8Array | string;
  parentSpanId?: Uint8Array | string | null;
  name: string;
  kind: number;
  attributes?: KeyValue[] | null;
  links?: { traceId: Uint8Array | string; spanId: Uint8Array | string }[] | null;
  status?: { code?: number | null; message?: string | null } | null;
}
interface ExportTraceServiceRequest {
  resourceSpans?: { resource?: { attributes?: KeyValue[] | null } | null; scopeSpans?: { spans?: OtlpSpan[] | null }[] | null }[] | null;
}
interface RequestType {
  decode(bytes: Uint8Array): ExportTraceServiceRequest;
}

const require = createRequire(import.meta.url);
const otlpRoot = require('otlp-transformer-protobufjs/build/src/generated/root') as {
  opentelemetry: { proto: { collector: { trace: { v1: { ExportTraceServiceRequest: RequestType } } } } };
};
const requestType = otlpRoot.opentelemetry.proto.collector.trace.v1.ExportTraceServiceRequest;

export type AttributeValue = string | number | boolean;

/** One received span. Ids are lower-case hex; `parentSpanId` is '' for a root span. */
export interface ReceivedSpan {
  readonly service: string;
  readonly resource: Readonly<Record<string, AttributeValue>>;
  readonly traceId: string;
  readonly spanId: string;
  readonly parentSpanId: string;
  readonly name: string;
  /** OTLP's SpanKind: 1 internal, 2 server, 3 client, 4 producer, 5 consumer. */
  readonly kind: number;
  readonly attributes: Readonly<Record<string, AttributeValue>>;
  readonly links: readonly { traceId: string; spanId: string }[];
  readonly statusCode: number;
}

export const otlpSpanKind = { internal: 1, server: 2, client: 3, producer: 4, consumer: 5 } as const;

export interface OtlpReceiver {
  /** The URL for OTEL_EXPORTER_OTLP_TRACES_ENDPOINT. */
  readonly tracesUrl: string;
  readonly spans: readonly ReceivedSpan[];
  /** Export requests received, and those that could not be decoded. */
  readonly requests: number;
  readonly undecodable: number;
  close(): Promise<void>;
}

/** Hex from the protobuf's bytes; JSON already carries hex. */
const hex = (id: Uint8Array | string | null | undefined): string =>
  id === null || id === undefined ? '' : typeof id === 'string' ? id.toLowerCase() : Buffer.from(id).toString('hex');

function value(any: AnyValue | null | undefined): AttributeValue {
  if (!any) return '';
  if (any.stringValue !== undefined && any.stringValue !== null) return any.stringValue;
  if (any.boolValue !== undefined && any.boolValue !== null) return any.boolValue;
  if (any.doubleValue !== undefined && any.doubleValue !== null) return any.doubleValue;
  if (any.intValue !== undefined && any.intValue !== null) return Number(any.intValue.toString());
  return '';
}

const attributeMap = (list: KeyValue[] | null | undefined): Record<string, AttributeValue> =>
  Object.fromEntries((list ?? []).map((pair) => [pair.key, value(pair.value)]));

function flatten(request: ExportTraceServiceRequest): ReceivedSpan[] {
  return (request.resourceSpans ?? []).flatMap((resourceSpans) => {
    const resource = attributeMap(resourceSpans.resource?.attributes);
    return (resourceSpans.scopeSpans ?? []).flatMap((scope) =>
      (scope.spans ?? []).map((span) => ({
        service: String(resource['service.name'] ?? ''),
        resource,
        traceId: hex(span.traceId),
        spanId: hex(span.spanId),
        parentSpanId: hex(span.parentSpanId),
        name: span.name,
        kind: span.kind,
        attributes: attributeMap(span.attributes),
        links: (span.links ?? []).map((link) => ({ traceId: hex(link.traceId), spanId: hex(link.spanId) })),
        statusCode: span.status?.code ?? 0,
      })),
    );
  });
}

export async function startOtlpReceiver(): Promise<OtlpReceiver> {
  const spans: ReceivedSpan[] = [];
  let requests = 0;
  let undecodable = 0;
  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      requests += 1;
      const body = Buffer.concat(chunks);
      try {
        const json = (req.headers['content-type'] ?? '').includes('json');
        spans.push(...flatten(json ? (JSON.parse(body.toString('utf8')) as ExportTraceServiceRequest) : requestType.decode(body)));
        res.writeHead(200, { 'content-type': json ? 'application/json' : 'application/x-protobuf' }).end(json ? '{}' : undefined);
      } catch {
        undecodable += 1;
        res.writeHead(400).end();
      }
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    tracesUrl: `http://127.0.0.1:${port}/v1/traces`,
    spans,
    get requests() {
      return requests;
    },
    get undecodable() {
      return undecodable;
    },
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}
