// OpenTelemetry tracing. Started by `telemetry-register.ts` (node --import) before any instrumented module loads.
// A trace always exists (its id goes into every log line and across HTTP and gRPC calls); spans are recorded and
// exported only when OTEL_EXPORTER_OTLP_ENDPOINT (or OTEL_EXPORTER_OTLP_TRACES_ENDPOINT) names a collector. Without
// one, every span is non-recording and only the instrumentations that carry the trace between services are loaded:
// recording spans nobody collects cost 10-15 % of each service's CPU (docs/benchmark.md).
import { OTLPTraceExporter } from '@opentelemetry/exporter-trace-otlp-http';
import { GrpcInstrumentation } from '@opentelemetry/instrumentation-grpc';
import { HttpInstrumentation } from '@opentelemetry/instrumentation-http';
import { IORedisInstrumentation } from '@opentelemetry/instrumentation-ioredis';
import { KoaInstrumentation } from '@opentelemetry/instrumentation-koa';
import { PgInstrumentation } from '@opentelemetry/instrumentation-pg';
import { NodeSDK } from '@opentelemetry/sdk-node';
import { AlwaysOffSampler, BatchSpanProcessor, NoopSpanProcessor } from '@opentelemetry/sdk-trace';

let sdk: NodeSDK | undefined;

export function startTelemetry(env: Readonly<Record<string, string | undefined>>): void {
  if (sdk || env['OTEL_SDK_DISABLED'] === 'true') return;
  const exporting = Boolean(env['OTEL_EXPORTER_OTLP_ENDPOINT'] || env['OTEL_EXPORTER_OTLP_TRACES_ENDPOINT']);
  sdk = new NodeSDK({
    // Metrics come from prom-client on /metrics and logs from pino: OpenTelemetry exports traces only.
    metricReaders: [],
    logRecordProcessors: [],
    // Without a collector OTEL_TRACES_SAMPLER is moot: nothing would receive what it samples. The no-op processor is
    // still needed, since without any processor the SDK installs no tracer and no trace ids are made.
    ...(exporting
      ? { spanProcessors: [new BatchSpanProcessor({ exporter: new OTLPTraceExporter() })] }
      : { spanProcessors: [new NoopSpanProcessor()], sampler: new AlwaysOffSampler() }),
    instrumentations: [
      // Probes and scrapes would drown real traffic in traces.
      new HttpInstrumentation({ ignoreIncomingRequestHook: (req) => /^\/(healthz|readyz|metrics)/.test(req.url ?? '') }),
      new GrpcInstrumentation({ ignoreGrpcMethods: ['Check', 'Watch'] }),
      // Spans inside one service: worth having only when they are recorded.
      ...(exporting ? [new KoaInstrumentation(), new PgInstrumentation(), new IORedisInstrumentation()] : []),
    ],
  });
  sdk.start();
}

/** Flushes spans still buffered; called last in a service's shutdown. */
export async function stopTelemetry(): Promise<void> {
  await sdk?.shutdown();
  sdk = undefined;
}
