// Saturation: autocannon keeps `connections` requests in flight (a new one the moment an answer arrives), for a time
// or for a number of requests (then at most `maxDurationS`), cycling through the given requests so every API key
// takes its turn.
import autocannon from 'autocannon';
import type { LoadResult } from './load-result.ts';

export interface ClosedLoopRequest {
  /** POST unless given. */
  readonly method?: 'GET' | 'POST' | 'PUT';
  readonly path: string;
  readonly headers: Readonly<Record<string, string>>;
  readonly body: string;
}

export interface ClosedLoopOptions {
  readonly url: string;
  readonly connections: number;
  /** Run for this long... */
  readonly durationS?: number;
  /** ...or until this many requests were answered, */
  readonly amount?: number;
  /** ...but no longer than this. */
  readonly maxDurationS?: number;
  readonly requests: readonly ClosedLoopRequest[];
}

export interface ClosedLoopResult extends LoadResult {
  /** Answers per second over the run, any status. */
  readonly answeredPerSecond: number;
  /**
   * Requests possibly still in flight when the run was stopped by time (autocannon drops them unanswered): the
   * system may have accepted them all the same. An upper bound, one per connection.
   */
  readonly cutOff: number;
}

type AutocannonRequest = Omit<ClosedLoopRequest, 'headers'> & { headers: Record<string, string> };

/**
 * autocannon builds every request of the list for each connection before the first is sent: 64 connections × 1,000
 * status reads cost the load generator about 0.75 s of CPU here, 0.15 ms per read of a 5,000-read run, counted in its
 * figure. A list longer than the connections is therefore one request whose next item is set up as it is sent
 * (about 0.03 ms each); a short one (the tenants' sends) is built up front, as autocannon does.
 */
function autocannonRequests(specs: readonly ClosedLoopRequest[], connections: number): autocannon.Request[] {
  const built = specs.map((spec): AutocannonRequest => ({ method: spec.method ?? 'POST', path: spec.path, headers: { ...spec.headers }, body: spec.body }));
  if (built.length <= connections) return built;
  let next = 0;
  return [{ setupRequest: (request: autocannon.Request) => ({ ...request, ...built[next++ % built.length] }) }];
}

export async function runClosedLoop(options: ClosedLoopOptions): Promise<ClosedLoopResult> {
  let stoppedByTime = options.amount === undefined;
  let timer: NodeJS.Timeout | undefined;
  const result = await new Promise<autocannon.Result>((resolve, reject) => {
    const instance = autocannon(
      {
        url: options.url,
        connections: options.connections,
        ...(options.amount === undefined ? { duration: options.durationS ?? 10 } : { amount: options.amount }),
        timeout: 10,
        requests: autocannonRequests(options.requests, options.connections),
      },
      (error, done) => (error ? reject(error instanceof Error ? error : new Error(String(error))) : resolve(done)),
    );
    if (options.amount !== undefined && options.maxDurationS !== undefined) {
      timer = setTimeout(() => {
        stoppedByTime = true;
        instance.stop();
      }, options.maxDurationS * 1_000);
    }
  });
  clearTimeout(timer);
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
    cutOff: stoppedByTime ? options.connections : 0,
  };
}
