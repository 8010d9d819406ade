// An OTLP trace receiver for tests and the benchmark: what a collector would receive from the services, over HTTP
// (protobuf or JSON bodies, as the request's content type says) or over gRPC (TraceService/Export). Protobuf is
// decoded with OpenTelemetry's own definitions (the generated root of @opentelemetry/otlp-transformer 0.203, the last
// release that ships it), JSON with JSON.parse; every span is kept in a flat form, and each request's headers.

import { createServer, type Server } from 'node:http';
import { createRequire } from 'node:module';
import type { AddressInfo } from 'node:net';
import * as grpc from '@grpc/grpc-js';

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
  /** The URL for OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: http://host:port/v1/traces over HTTP, http://host:port over gRPC. */
  readonly tracesUrl: string;
  readonly spans: readonly ReceivedSpan[];
  /** The headers (gRPC: metadata) of each export request, names in lower case. */
  readonly requestHeaders: readonly Readonly<Record<string, string>>[];
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

/** What a receiver keeps of the export requests, whichever transport brought them. */
class Received {
  readonly spans: ReceivedSpan[] = [];
  readonly requestHeaders: Record<string, string>[] = [];
  requests = 0;
  undecodable = 0;

  /** Keeps the spans of one request; false when it could not be decoded. */
  add(headers: Record<string, string>, decode: () => ExportTraceServiceRequest): boolean {
    this.requests += 1;
    this.requestHeaders.push(headers);
    try {
      this.spans.push(...flatten(decode()));
      return true;
    } catch {
      this.undecodable += 1;
      return false;
    }
  }

  receiver(tracesUrl: string, close: () => Promise<void>): OtlpReceiver {
    const received = this;
    return {
      tracesUrl,
      spans: this.spans,
      requestHeaders: this.requestHeaders,
      get requests() {
        return received.requests;
      },
      get undecodable() {
        return received.undecodable;
      },
      close,
    };
  }
}

/** Over HTTP (the default), or over gRPC. */
export async function startOtlpReceiver(transport: 'http' | 'grpc' = 'http'): Promise<OtlpReceiver> {
  return transport === 'grpc' ? startGrpcReceiver() : startHttpReceiver();
}

async function startHttpReceiver(): Promise<OtlpReceiver> {
  const received = new Received();
  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      const body = Buffer.concat(chunks);
      const json = (req.headers['content-type'] ?? '').includes('json');
      const headers = Object.fromEntries(Object.entries(req.headers).map(([name, value]) => [name, String(value)]));
      if (received.add(headers, () => (json ? (JSON.parse(body.toString('utf8')) as ExportTraceServiceRequest) : requestType.decode(body)))) {
        res.writeHead(200, { 'content-type': json ? 'application/json' : 'application/x-protobuf' }).end(json ? '{}' : undefined);
      } else {
        res.writeHead(400).end();
      }
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return received.receiver(`http://127.0.0.1:${port}/v1/traces`, () => new Promise<void>((resolve) => server.close(() => resolve())));
}

/** OTLP/gRPC's one method; its response (ExportTraceServiceResponse, all fields unset) encodes to no bytes. */
const traceService: grpc.ServiceDefinition = {
  Export: {
    path: '/opentelemetry.proto.collector.trace.v1.TraceService/Export',
    requestStream: false,
    responseStream: false,
    requestSerialize: (bytes: Buffer) => bytes,
    requestDeserialize: (bytes: Buffer) => bytes,
    responseSerialize: () => Buffer.alloc(0),
    responseDeserialize: (bytes: Buffer) => bytes,
  },
};

async function startGrpcReceiver(): Promise<OtlpReceiver> {
  const received = new Received();
  const server = new grpc.Server();
  server.addService(traceService, {
    Export: (call: grpc.ServerUnaryCall<Buffer, Buffer>, callback: grpc.sendUnaryData<Buffer>) => {
      const headers = Object.fromEntries(Object.entries(call.metadata.getMap()).map(([name, value]) => [name, String(value)]));
      if (received.add(headers, () => requestType.decode(call.request))) callback(null, Buffer.alloc(0));
      else callback({ code: grpc.status.INVALID_ARGUMENT, details: 'not an ExportTraceServiceRequest' });
    },
  });
  const port = await new Promise<number>((resolve, reject) =>
    server.bindAsync('127.0.0.1:0', grpc.ServerCredentials.createInsecure(), (error, bound) => (error ? reject(error) : resolve(bound))),
  );
  return received.receiver(`http://127.0.0.1:${port}`, () => new Promise<void>((resolve) => server.tryShutdown(() => resolve())));
}
