// Open-loop load at a fixed arrival rate: request i is started at start + i / rate whatever happened to the ones
// before it, the way independent integrators arrive. autocannon's `overallRate` cannot do this: each connection sends
// its per-second quota back to back at the start of every second, so its "1,000/s" is a burst at saturation followed
// by silence, and its latency is the saturation latency. Latency is timed from the moment a request is started, so
// waiting for one of the `connections` keep-alive sockets counts, as it would for a client.
import { Agent, request } from 'node:http';
import { summarize, type LoadResult } from './load-result.ts';

export interface PacedRequest {
  readonly path: string;
  readonly headers: Readonly<Record<string, string>>;
  readonly body: Buffer;
}

export interface PacedLoadOptions {
  /** http://host:port */
  readonly url: string;
  /** Requests started per second. */
  readonly rate: number;
  readonly durationS: number;
  /** Most sockets open at once (keep-alive); further requests wait for one. */
  readonly connections: number;
  /** The i-th request. */
  readonly request: (index: number) => PacedRequest;
  /** A request unanswered after this long counts as an error. */
  readonly timeoutMs?: number;
}

export interface PacedLoadResult extends LoadResult {
  readonly offeredRate: number;
  /** Answers that carried `Idempotent-Replayed: true`. */
  readonly replayed: number;
  /** Largest delay between a request's scheduled start and its actual start: above a few ms, the generator itself was starved. */
  readonly maxScheduleLagMs: number;
}

export async function runPaced(options: PacedLoadOptions): Promise<PacedLoadResult> {
  const target = new URL(options.url);
  const agent = new Agent({ keepAlive: true, maxSockets: options.connections, maxFreeSockets: options.connections });
  const total = Math.max(1, Math.round(options.rate * options.durationS));
  const timeoutMs = options.timeoutMs ?? 10_000;
  const latencies = new Float64Array(total);
  const statuses: Record<string, number> = {};
  let answered = 0;
  let errors = 0;
  let replayed = 0;
  let started = 0;
  let settled = 0;
  let maxScheduleLagMs = 0;
  const allSettled = Promise.withResolvers<void>();
  const begin = performance.now();
  let lastAnswer = begin;

  const settle = (): void => {
    settled += 1;
    if (settled === total) allSettled.resolve();
  };

  const fire = (index: number): void => {
    const spec = options.request(index);
    const sentAt = performance.now();
    const outgoing = request({
      agent,
      host: target.hostname,
      port: target.port,
      method: 'POST',
      path: spec.path,
      headers: { ...spec.headers, 'content-length': String(spec.body.length) },
    });
    let done = false;
    // A request can fail after its response began (socket reset mid-body): count each request once.
    const failed = (): void => {
      if (done) return;
      done = true;
      errors += 1;
      settle();
    };
    outgoing.setTimeout(timeoutMs, () => outgoing.destroy(new Error(`no answer within ${timeoutMs} ms`)));
    outgoing.on('error', failed);
    outgoing.on('response', (response) => {
      const status = String(response.statusCode ?? 0);
      if (response.headers['idempotent-replayed'] === 'true') replayed += 1;
      response.on('end', () => {
        if (done) return;
        done = true;
        lastAnswer = performance.now();
        latencies[answered] = lastAnswer - sentAt;
        answered += 1;
        statuses[status] = (statuses[status] ?? 0) + 1;
        settle();
      });
      response.on('error', failed);
      response.resume();
    });
    outgoing.end(spec.body);
  };

  // Node timers fire at best every millisecond: each tick starts every request whose time has come.
  const ticker = setInterval(() => {
    const now = performance.now();
    const due = Math.min(total, Math.floor(((now - begin) * options.rate) / 1_000) + 1);
    if (due > started) maxScheduleLagMs = Math.max(maxScheduleLagMs, now - (begin + (started * 1_000) / options.rate));
    while (started < due) fire(started++);
    if (started >= total) clearInterval(ticker);
  }, 1);

  await allSettled.promise;
  agent.destroy();
  return {
    sent: total,
    completed: answered,
    statuses,
    errors,
    durationS: (lastAnswer - begin) / 1_000,
    latencyMs: summarize(latencies.subarray(0, answered)),
    offeredRate: options.rate,
    replayed,
    maxScheduleLagMs,
  };
}
