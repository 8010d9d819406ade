// OpenTelemetry tracing. Started by `telemetry-register.ts` (node --import) before any instrumented module loads.
// Spans always exist (their ids go into every log line and across gRPC calls); they are exported only when
// OTEL_EXPORTER_OTLP_ENDPOINT (or OTEL_EXPORTER_OTLP_TRACES_ENDPOINT) names a collector.
import { OTLPTraceExporter } from '@opentelemetry/exporter-trace-otlp-http';
import { GrpcInstrumentation } from '@opentelemetry/instrumentation-grpc';
import { HttpInstrumentation } from '@opentelemetry/instrumentation-http';
import { IORedisInstrumentation } from '@opentelemetry/instrumentation-ioredis';
import { KoaInstrumentation } from '@opentelemetry/instrumentation-koa';
import { PgInstrumentation } from '@opentelemetry/instrumentation-pg';
import { NodeSDK } from '@opentelemetry/sdk-node';
import { BatchSpanProcessor, NoopSpanProcessor } from '@opentelemetry/sdk-trace';

let sdk: NodeSDK | undefined;

export function startTelemetry(env: Readonly<Record<string, string | undefined>>): void {
  if (sdk || env['OTEL_SDK_DISABLED'] === 'true') return;
  const exporting = Boolean(env['OTEL_EXPORTER_OTLP_ENDPOINT'] || env['OTEL_EXPORTER_OTLP_TRACES_ENDPOINT']);
  sdk = new NodeSDK({
    // Metrics come from prom-client on /metrics and logs from pino: OpenTelemetry exports traces only.
    metricReaders: [],
    logRecordProcessors: [],
    spanProcessors: exporting ? [new BatchSpanProcessor({ exporter: new OTLPTraceExporter() })] : [new NoopSpanProcessor()],
    instrumentations: [
      // Probes and scrapes would drown real traffic in traces.
      new HttpInstrumentation({ ignoreIncomingRequestHook: (req) => /^\/(healthz|readyz|metrics)/.test(req.url ?? '') }),
      new KoaInstrumentation(),
      new GrpcInstrumentation({ ignoreGrpcMethods: ['Check', 'Watch'] }),
      new PgInstrumentation(),
      new IORedisInstrumentation(),
    ],
  });
  sdk.start();
}

/** Flushes spans still buffered; called last in a service's shutdown. */
export async function stopTelemetry(): Promise<void> {
  await sdk?.shutdown();
  sdk = undefined;
}
