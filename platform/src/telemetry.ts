// OpenTelemetry tracing. Started by `telemetry-register.ts` (node --import) before any instrumented module loads.
// A trace always exists (its id goes into every log line and across HTTP and gRPC calls); spans are recorded and
// exported only when OTEL_EXPORTER_OTLP_ENDPOINT (or OTEL_EXPORTER_OTLP_TRACES_ENDPOINT) names a collector. Without
// one, every span is non-recording and only the instrumentations that carry the trace between services are loaded:
// recording spans nobody collects cost 12-16 % of each service's CPU.

import { readFileSync } from 'node:fs';
import { hostname } from 'node:os';
import { dirname, join } from 'node:path';
import { context, DiagConsoleLogger, diag, propagation, type TextMapPropagator, trace } from '@opentelemetry/api';
import { AsyncLocalStorageContextManager } from '@opentelemetry/context-async-hooks';
import { CompositePropagator, diagLogLevelFromString, W3CBaggagePropagator, W3CTraceContextPropagator } from '@opentelemetry/core';
import { type Instrumentation, registerInstrumentations } from '@opentelemetry/instrumentation';
import { GrpcInstrumentation } from '@opentelemetry/instrumentation-grpc';
import {
  defaultResource,
  detectResources,
  envDetector,
  hostDetector,
  osDetector,
  processDetector,
  type Resource,
  resourceFromAttributes,
} from '@opentelemetry/resources';
import {
  AlwaysOffSampler,
  AlwaysOnSampler,
  BatchSpanProcessor,
  ParentBasedSampler,
  type Sampler,
  type SpanExporter,
  type SpanLimits,
  TraceIdRatioBasedSampler,
  TracerProvider,
} from '@opentelemetry/sdk-trace';

let provider: TracerProvider | undefined;

/** The service a process runs: the workspace package of its entry script (`mailer-svc/src/main.ts` → @notify/mailer-svc). */
function entryPackage(entry: string | undefined): { name?: string; version?: string } {
  for (let dir = entry ? dirname(entry) : ''; dir && dir !== dirname(dir); dir = dirname(dir)) {
    try {
      return JSON.parse(readFileSync(join(dir, 'package.json'), 'utf8')) as { name?: string; version?: string };
    } catch {
      // no package.json at this level: look one up
    }
  }
  return {};
}

/**
 * Who the spans come from: service.name (the service's package, without its scope), service.version (its package
 * version) and service.instance.id (the pod's name, else host and pid), so that a tracing backend tells every service
 * and replica apart under `npm start` as in the chart. OTEL_SERVICE_NAME and OTEL_RESOURCE_ATTRIBUTES still override.
 */
export function serviceResource(env: Readonly<Record<string, string | undefined>>, entry: string | undefined, pid: number): Resource {
  const pkg = entryPackage(entry);
  const name = pkg.name?.replace(/^@[^/]+\//, '');
  return defaultResource().merge(
    resourceFromAttributes({
      ...(name ? { 'service.name': name } : {}),
      ...(pkg.version ? { 'service.version': pkg.version } : {}),
      'service.instance.id': env.POD_NAME || `${hostname()}:${pid}`,
    }),
  );
}

type Environment = Readonly<Record<string, string | undefined>>;

/**
 * Starts tracing: the context manager, the W3C propagators, the tracer provider and the instrumentations, as the
 * SDK's NodeSDK would with this configuration. NodeSDK itself is not used: it loads the exporters of every signal and
 * protocol, and importing it took about two thirds of a second of CPU at every start of every process (starting
 * tracing without a collector: 0.81-1.02 s of CPU with it, 0.42-0.52 s now). What only exporting needs (the OTLP
 * exporter, the instrumentations of spans inside a service) is loaded only when a collector is named.
 */
export async function startTelemetry(env: Environment, entry: string | undefined, pid: number): Promise<void> {
  if (provider || env.OTEL_SDK_DISABLED === 'true') return;
  const exporting = Boolean(env.OTEL_EXPORTER_OTLP_ENDPOINT || env.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT);
  const logLevel = env.OTEL_LOG_LEVEL;
  if (logLevel) diag.setLogger(new DiagConsoleLogger(), { logLevel: diagLogLevelFromString(logLevel) });
  const instrumentations: Instrumentation[] = [
    // SendMany and GetMessages carry many Send and GetMessage calls, each traced as its own call (grpc/batched-calls.ts):
    // a span of the batch would be a trace of its own for every call, or sit in the trace of whichever item came first.
    new GrpcInstrumentation({ ignoreGrpcMethods: ['Check', 'Watch', 'SendMany', 'GetMessages'] }),
    ...(exporting ? await exportingInstrumentations() : []),
  ];
  registerInstrumentations({ instrumentations });
  context.setGlobalContextManager(new AsyncLocalStorageContextManager().enable());
  const propagator = propagatorFromEnvironment(env);
  if (propagator) propagation.setGlobalPropagator(propagator);
  provider = new TracerProvider({
    // OTEL_RESOURCE_ATTRIBUTES and OTEL_SERVICE_NAME (envDetector, last) override the service's own attributes.
    resource: serviceResource(env, entry, pid).merge(detectResources({ detectors: [processDetector, hostDetector, osDetector, envDetector] })),
    spanLimits: spanLimitsFromEnvironment(env),
    // Without a collector OTEL_TRACES_SAMPLER is moot: nothing would receive what it samples. Spans are still made,
    // not recording, so that trace ids are.
    ...(exporting
      ? { spanProcessors: [new BatchSpanProcessor({ exporter: await otlpExporter(env), ...batchSettings(env) })], ...samplerFromEnvironment(env) }
      : { sampler: new AlwaysOffSampler() }),
  });
  trace.setGlobalTracerProvider(provider);
}

/**
 * The instrumentations worth having only when spans are recorded. Probes and scrapes would drown real traffic in
 * traces. Without a collector HTTP is left alone: the gateway's listener makes each request's trace ids itself
 * (tracing.ts, tracedRequests), and the services call one another over gRPC, so the only requests made with
 * node:http(s) are webhook-svc's to the integrators' endpoints, not a hop between services. A span nobody records,
 * made for each, cost the gateway and webhook-svc a tenth to a fifth of their CPU per request (an HTTP server: 79-83 µs
 * a request with it, 46-48 µs without).
 * A query or command outside any request (a periodic task's) would be a trace of its own: left out. Koa's middleware
 * layers (each an anonymous function) and pg's pool checkouts say nothing a trace reader needs and would be a third
 * of every trace: routes and queries are kept.
 */
async function exportingInstrumentations(): Promise<Instrumentation[]> {
  const [{ HttpInstrumentation }, { KoaInstrumentation, KoaLayerType }, { PgInstrumentation }, { IORedisInstrumentation }] = await Promise.all([
    import('@opentelemetry/instrumentation-http'),
    import('@opentelemetry/instrumentation-koa'),
    import('@opentelemetry/instrumentation-pg'),
    import('@opentelemetry/instrumentation-ioredis'),
  ]);
  return [
    new HttpInstrumentation({ ignoreIncomingRequestHook: (req) => /^\/(healthz|readyz|metrics)/.test(req.url ?? '') }),
    new KoaInstrumentation({ ignoreLayersType: [KoaLayerType.MIDDLEWARE] }),
    new PgInstrumentation({ requireParentSpan: true, ignoreConnectSpans: true }),
    new IORedisInstrumentation({ requireParentSpan: true }),
  ];
}

/** The OTLP transports of the specification, as OTEL_EXPORTER_OTLP_(TRACES_)PROTOCOL names them. */
export const otlpProtocols = ['grpc', 'http/protobuf', 'http/json'] as const;
export type OtlpProtocol = (typeof otlpProtocols)[number];

/**
 * OTEL_EXPORTER_OTLP_TRACES_PROTOCOL, else OTEL_EXPORTER_OTLP_PROTOCOL, else http/protobuf (the specification's
 * default); an unknown value is reported through diag and the default used.
 */
export function otlpProtocolFromEnvironment(env: Environment): OtlpProtocol {
  const named = (env.OTEL_EXPORTER_OTLP_TRACES_PROTOCOL || env.OTEL_EXPORTER_OTLP_PROTOCOL)?.trim();
  if (!named) return 'http/protobuf';
  if ((otlpProtocols as readonly string[]).includes(named)) return named as OtlpProtocol;
  diag.error(`unknown OTLP protocol "${named}" (one of ${otlpProtocols.join(', ')}), using http/protobuf`);
  return 'http/protobuf';
}

/**
 * The OTLP exporter of the protocol the environment names. Each exporter reads the rest of the standard variables
 * itself, the per-signal form first: OTEL_EXPORTER_OTLP_(TRACES_)ENDPOINT, _HEADERS, _TIMEOUT, _COMPRESSION, and
 * for gRPC _INSECURE and the _CERTIFICATE files. Only the chosen one is loaded.
 */
async function otlpExporter(env: Environment): Promise<SpanExporter> {
  const exporters: Record<OtlpProtocol, () => Promise<SpanExporter>> = {
    grpc: async () => new (await import('@opentelemetry/exporter-trace-otlp-grpc')).OTLPTraceExporter(),
    'http/protobuf': async () => new (await import('@opentelemetry/exporter-trace-otlp-proto')).OTLPTraceExporter(),
    'http/json': async () => new (await import('@opentelemetry/exporter-trace-otlp-http')).OTLPTraceExporter(),
  };
  return exporters[otlpProtocolFromEnvironment(env)]();
}

/** OTEL_TRACES_SAMPLER and OTEL_TRACES_SAMPLER_ARG, as the specification names them; the provider's default (parent-based, always on) otherwise. */
export function samplerFromEnvironment(env: Environment): { sampler?: Sampler } {
  const name = env.OTEL_TRACES_SAMPLER?.trim();
  if (!name) return {};
  const argument = Number(env.OTEL_TRACES_SAMPLER_ARG);
  const ratio = env.OTEL_TRACES_SAMPLER_ARG?.trim() && argument >= 0 && argument <= 1 ? argument : 1;
  const samplers: Record<string, () => Sampler> = {
    always_on: () => new AlwaysOnSampler(),
    always_off: () => new AlwaysOffSampler(),
    traceidratio: () => new TraceIdRatioBasedSampler(ratio),
    parentbased_always_on: () => new ParentBasedSampler({ root: new AlwaysOnSampler() }),
    parentbased_always_off: () => new ParentBasedSampler({ root: new AlwaysOffSampler() }),
    parentbased_traceidratio: () => new ParentBasedSampler({ root: new TraceIdRatioBasedSampler(ratio) }),
  };
  const make = samplers[name];
  if (!make) diag.error(`unknown OTEL_TRACES_SAMPLER value "${name}", using the default`);
  return make ? { sampler: make() } : {};
}

/** OTEL_PROPAGATORS (tracecontext, baggage, none); W3C trace context and baggage when unset. Undefined: none. */
export function propagatorFromEnvironment(env: Environment): TextMapPropagator | undefined {
  const names = [
    ...new Set(
      (env.OTEL_PROPAGATORS ?? '')
        .split(',')
        .map((name) => name.trim())
        .filter(Boolean),
    ),
  ];
  if (names.includes('none')) return undefined;
  const known: Record<string, () => TextMapPropagator> = { tracecontext: () => new W3CTraceContextPropagator(), baggage: () => new W3CBaggagePropagator() };
  const propagators = (names.length > 0 ? names : ['tracecontext', 'baggage']).flatMap((name) => {
    const make = known[name];
    if (!make) diag.warn(`OTEL_PROPAGATORS: "${name}" is not available; tracecontext and baggage are`);
    return make ? [make()] : [];
  });
  return propagators.length === 0 ? undefined : new CompositePropagator({ propagators });
}

/** The OTEL_*_LIMIT variables of the specification; the provider's defaults for those unset. */
export function spanLimitsFromEnvironment(env: Environment): SpanLimits {
  const number = (...names: string[]): number | undefined => {
    for (const name of names) {
      const value = Number(env[name]);
      if (env[name]?.trim() && Number.isFinite(value)) return value;
    }
    return undefined;
  };
  const limits: SpanLimits = {
    attributeCountLimit: number('OTEL_SPAN_ATTRIBUTE_COUNT_LIMIT', 'OTEL_ATTRIBUTE_COUNT_LIMIT'),
    attributeValueLengthLimit: number('OTEL_SPAN_ATTRIBUTE_VALUE_LENGTH_LIMIT', 'OTEL_ATTRIBUTE_VALUE_LENGTH_LIMIT'),
    eventCountLimit: number('OTEL_SPAN_EVENT_COUNT_LIMIT'),
    linkCountLimit: number('OTEL_SPAN_LINK_COUNT_LIMIT'),
    attributePerEventCountLimit: number('OTEL_EVENT_ATTRIBUTE_COUNT_LIMIT', 'OTEL_SPAN_ATTRIBUTE_PER_EVENT_COUNT_LIMIT'),
    attributePerLinkCountLimit: number('OTEL_LINK_ATTRIBUTE_COUNT_LIMIT', 'OTEL_SPAN_ATTRIBUTE_PER_LINK_COUNT_LIMIT'),
  };
  return Object.fromEntries(Object.entries(limits).filter(([, value]) => value !== undefined));
}

/** The OTEL_BSP_* variables of the specification, which this version of the processor no longer reads itself. */
function batchSettings(env: Readonly<Record<string, string | undefined>>): Record<string, number> {
  const settings: Record<string, number> = {};
  const variables = {
    OTEL_BSP_SCHEDULE_DELAY: 'scheduledDelayMillis',
    OTEL_BSP_EXPORT_TIMEOUT: 'exportTimeoutMillis',
    OTEL_BSP_MAX_QUEUE_SIZE: 'maxQueueSize',
    OTEL_BSP_MAX_EXPORT_BATCH_SIZE: 'maxExportBatchSize',
  };
  for (const [variable, option] of Object.entries(variables)) {
    const value = Number(env[variable]);
    if (env[variable] && Number.isInteger(value) && value > 0) settings[option] = value;
  }
  return settings;
}

/** Flushes spans still buffered; called last in a service's shutdown. */
export async function stopTelemetry(): Promise<void> {
  await provider?.shutdown();
  provider = undefined;
}
