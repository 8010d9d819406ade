// What one load run measured, whichever generator produced it: the figures the table and the results file show.

export interface LatencySummary {
  readonly p50: number;
  readonly p90: number;
  readonly p99: number;
  readonly max: number;
  readonly mean: number;
}

export interface LoadResult {
  /** Requests the generator started. */
  readonly sent: number;
  /** Responses received (any status). */
  readonly completed: number;
  /** Responses by HTTP status, e.g. { "202": 9_998, "409": 2 }. */
  readonly statuses: Readonly<Record<string, number>>;
  /** Requests that failed without an answer for another reason than the deadline (connection refused or reset). */
  readonly errors: number;
  /** Requests still unanswered at the deadline (counted from when the request was started, queueing included). */
  readonly timeouts: number;
  /** Seconds from the first request to the last answer. */
  readonly durationS: number;
  /** Latency of answered requests, in milliseconds. */
  readonly latencyMs: LatencySummary;
}

export const emptyLatency: LatencySummary = { p50: 0, p90: 0, p99: 0, max: 0, mean: 0 };

/** Nearest-rank percentiles of raw samples (sorted in place). */
export function summarize(samples: Float64Array | number[]): LatencySummary {
  if (samples.length === 0) return emptyLatency;
  const sorted = Float64Array.from(samples).sort();
  const rank = (q: number): number => sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil(q * sorted.length) - 1))] ?? 0;
  let sum = 0;
  for (const value of sorted) sum += value;
  return { p50: rank(0.5), p90: rank(0.9), p99: rank(0.99), max: sorted[sorted.length - 1] ?? 0, mean: sum / sorted.length };
}

export function countOf(result: LoadResult, status: number): number {
  return result.statuses[String(status)] ?? 0;
}

/** Responses that were neither the expected status nor 5xx, e.g. 409 or 429: reported, not fatal. */
export function countOther(result: LoadResult, expected: number): number {
  return Object.entries(result.statuses).reduce((sum, [status, count]) => (Number(status) === expected || Number(status) >= 500 ? sum : sum + count), 0);
}

export function count5xx(result: LoadResult): number {
  return Object.entries(result.statuses).reduce((sum, [status, count]) => (Number(status) >= 500 ? sum + count : sum), 0);
}
