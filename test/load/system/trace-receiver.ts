// The bench's handle on its OTLP trace receiver process (trace-receiver-process.ts).
import { startChild } from './child.ts';

export interface TraceCounts {
  /** Spans received so far, in all and per service (the resource's service.name). */
  readonly spans: number;
  readonly byService: Readonly<Record<string, number>>;
  /** Export requests received, and those it could not decode. */
  readonly requests: number;
  readonly undecodable: number;
}

export interface BenchTraceReceiver {
  /** The URL for OTEL_EXPORTER_OTLP_TRACES_ENDPOINT. */
  readonly tracesUrl: string;
  readonly pid: number | undefined;
  counts(): Promise<TraceCounts>;
  stop(): Promise<void>;
}

export async function startBenchTraceReceiver(): Promise<BenchTraceReceiver> {
  const child = await startChild<{ tracesUrl: string }>(new URL('./trace-receiver-process.ts', import.meta.url), []);
  return {
    tracesUrl: child.ready.tracesUrl,
    pid: child.pid,
    counts: async () => {
      const { spans, byService, requests, undecodable } = await child.ask<TraceCounts>({ type: 'count' });
      return { spans, byService, requests, undecodable };
    },
    stop: () => child.stop(),
  };
}
