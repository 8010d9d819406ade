// Open-loop load at a fixed arrival rate: request i is started at start + i / rate whatever happened to the ones
// before it, the way independent integrators arrive. autocannon's `overallRate` cannot do this: each connection sends
// its per-second quota back to back at the start of every second, so its "1,000/s" is a burst at saturation followed
// by silence, and its latency is the saturation latency.

import { createHttpSender, type PreparedRequest } from './http-sender.ts';
import type { LoadResult } from './load-result.ts';

export type PacedRequest = PreparedRequest;

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
  /** A request unanswered this long after it was started counts as an error. */
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
  const total = Math.max(1, Math.round(options.rate * options.durationS));
  const sender = createHttpSender({ url: options.url, connections: options.connections, expected: total, timeoutMs: options.timeoutMs ?? 10_000 });
  const requests: Array<Promise<void>> = [];
  let maxScheduleLagMs = 0;
  const begin = performance.now();
  const allStarted = Promise.withResolvers<void>();
  // Node timers fire at best every millisecond: each tick starts every request whose time has come.
  const ticker = setInterval(() => {
    const now = performance.now();
    const due = Math.min(total, Math.floor(((now - begin) * options.rate) / 1_000) + 1);
    if (due > requests.length) maxScheduleLagMs = Math.max(maxScheduleLagMs, now - (begin + (requests.length * 1_000) / options.rate));
    while (requests.length < due) requests.push(sender.send(options.request(requests.length)));
    if (requests.length >= total) {
      clearInterval(ticker);
      allStarted.resolve();
    }
  }, 1);
  await allStarted.promise;
  await Promise.all(requests);
  return { ...sender.finish(), offeredRate: options.rate, maxScheduleLagMs };
}
