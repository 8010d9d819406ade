// OpenTelemetry tracing. Started by `telemetry-register.ts` (node --import) before any instrumented module loads.
// A trace always exists (its id goes into every log line and across HTTP and gRPC calls); spans are recorded and
// exported only when OTEL_EXPORTER_OTLP_ENDPOINT (or OTEL_EXPORTER_OTLP_TRACES_ENDPOINT) names a collector. Without
// one, every span is non-recording and only the instrumentations that carry the trace between services are loaded:
// recording spans nobody collects cost 10-15 % of each service's CPU (docs/benchmark.md).
import { OTLPTraceExporter } from '@opentelemetry/exporter-trace-otlp-proto';
import { GrpcInstrumentation } from '@opentelemetry/instrumentation-grpc';
import { HttpInstrumentation } from '@opentelemetry/instrumentation-http';
import { IORedisInstrumentation } from '@opentelemetry/instrumentation-ioredis';
import { KoaInstrumentation, KoaLayerType } from '@opentelemetry/instrumentation-koa';
import { PgInstrumentation } from '@opentelemetry/instrumentation-pg';
import { defaultResource, envDetector, hostDetector, osDetector, processDetector, resourceFromAttributes, type Resource } from '@opentelemetry/resources';
import { NodeSDK } from '@opentelemetry/sdk-node';
import { AlwaysOffSampler, BatchSpanProcessor, NoopSpanProcessor } from '@opentelemetry/sdk-trace';
import { readFileSync } from 'node:fs';
import { hostname } from 'node:os';
import { dirname, join } from 'node:path';

let sdk: NodeSDK | undefined;

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
      'service.instance.id': env['POD_NAME'] || `${hostname()}:${pid}`,
    }),
  );
}

export function startTelemetry(env: Readonly<Record<string, string | undefined>>, entry: string | undefined, pid: number): void {
  if (sdk || env['OTEL_SDK_DISABLED'] === 'true') return;
  const exporting = Boolean(env['OTEL_EXPORTER_OTLP_ENDPOINT'] || env['OTEL_EXPORTER_OTLP_TRACES_ENDPOINT']);
  sdk = new NodeSDK({
    resource: serviceResource(env, entry, pid),
    // The environment's attributes override the resource above; the SDK's random service.instance.id would too.
    resourceDetectors: [processDetector, hostDetector, osDetector, envDetector],
    // Metrics come from prom-client on /metrics and logs from pino: OpenTelemetry exports traces only.
    metricReaders: [],
    logRecordProcessors: [],
    // Without a collector OTEL_TRACES_SAMPLER is moot: nothing would receive what it samples. The no-op processor is
    // still needed, since without any processor the SDK installs no tracer and no trace ids are made.
    ...(exporting
      ? { spanProcessors: [new BatchSpanProcessor({ exporter: new OTLPTraceExporter(), ...batchSettings(env) })] }
      : { spanProcessors: [new NoopSpanProcessor()], sampler: new AlwaysOffSampler() }),
    instrumentations: [
      // Probes and scrapes would drown real traffic in traces. Without a collector HTTP is left alone: the gateway's
      // listener makes each request's trace ids itself (tracing.ts, tracedRequests), and the services call one another
      // over gRPC, so the only requests made with node:http(s) are webhook-svc's to the integrators' endpoints, not a
      // hop between services. A span nobody records, made for each, cost the gateway and webhook-svc a tenth to a fifth
      // of their CPU per request (docs/benchmark.md).
      ...(exporting ? [new HttpInstrumentation({ ignoreIncomingRequestHook: (req) => /^\/(healthz|readyz|metrics)/.test(req.url ?? '') })] : []),
      // SendMany and GetMessages carry many Send and GetMessage calls, each traced as its own call (grpc/batched-calls.ts):
      // a span of the batch would be a trace of its own for every call, or sit in the trace of whichever item came first.
      new GrpcInstrumentation({ ignoreGrpcMethods: ['Check', 'Watch', 'SendMany', 'GetMessages'] }),
      // Spans inside one service: worth having only when they are recorded.
      // A query or command outside any request (a periodic task's) would be a trace of its own: left out.
      // Koa's middleware layers (each an anonymous function) and pg's pool checkouts say nothing a trace reader needs
      // and would be a third of every trace: routes and queries are kept.
      ...(exporting
        ? [
            new KoaInstrumentation({ ignoreLayersType: [KoaLayerType.MIDDLEWARE] }),
            new PgInstrumentation({ requireParentSpan: true, ignoreConnectSpans: true }),
            new IORedisInstrumentation({ requireParentSpan: true }),
          ]
        : []),
    ],
  });
  sdk.start();
}

/** The OTEL_BSP_* variables of the specification, which this version of the processor no longer reads itself. */
function batchSettings(env: Readonly<Record<string, string | undefined>>): Record<string, number> {
  const settings: Record<string, number> = {};
  const variables = { OTEL_BSP_SCHEDULE_DELAY: 'scheduledDelayMillis', OTEL_BSP_EXPORT_TIMEOUT: 'exportTimeoutMillis', OTEL_BSP_MAX_QUEUE_SIZE: 'maxQueueSize', OTEL_BSP_MAX_EXPORT_BATCH_SIZE: 'maxExportBatchSize' };
  for (const [variable, option] of Object.entries(variables)) {
    const value = Number(env[variable]);
    if (env[variable] && Number.isInteger(value) && value > 0) settings[option] = value;
  }
  return settings;
}

/** Flushes spans still buffered; called last in a service's shutdown. */
export async function stopTelemetry(): Promise<void> {
  await sdk?.shutdown();
  sdk = undefined;
}
