// Saturation: autocannon keeps `connections` requests in flight (a new one the moment an answer arrives), for a time
// or for a number of requests, cycling through the given requests so every API key takes its turn.
import autocannon from 'autocannon';
import type { LoadResult } from './load-result.ts';

export interface ClosedLoopRequest {
  readonly path: string;
  readonly headers: Readonly<Record<string, string>>;
  readonly body: string;
}

export interface ClosedLoopOptions {
  readonly url: string;
  readonly connections: number;
  /** Run for this long... */
  readonly durationS?: number;
  /** ...or until this many requests were answered. */
  readonly amount?: number;
  readonly requests: readonly ClosedLoopRequest[];
}

export interface ClosedLoopResult extends LoadResult {
  /** Answers per second over the run, any status. */
  readonly answeredPerSecond: number;
}

export async function runClosedLoop(options: ClosedLoopOptions): Promise<ClosedLoopResult> {
  const result = await autocannon({
    url: options.url,
    connections: options.connections,
    ...(options.amount === undefined ? { duration: options.durationS ?? 10 } : { amount: options.amount }),
    timeout: 10,
    requests: options.requests.map((spec) => ({ method: 'POST' as const, path: spec.path, headers: { ...spec.headers }, body: spec.body })),
  });
  const statuses: Record<string, number> = {};
  for (const [status, stats] of Object.entries(result.statusCodeStats ?? {})) statuses[status] = stats.count ?? 0;
  const completed = Object.values(statuses).reduce((sum, count) => sum + count, 0);
  return {
    sent: result.requests.sent,
    completed,
    statuses,
    errors: result.errors - result.timeouts,
    timeouts: result.timeouts,
    durationS: result.duration,
    // autocannon records whole milliseconds.
    latencyMs: { p50: result.latency.p50, p90: result.latency.p90, p99: result.latency.p99, max: result.latency.max, mean: result.latency.mean },
    answeredPerSecond: completed / result.duration,
  };
}
