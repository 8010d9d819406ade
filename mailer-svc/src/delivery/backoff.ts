// When a deferred message is offered again: exponential backoff with full jitter, so replicas retrying after one relay
// outage spread out instead of returning together.

export interface BackoffPolicy {
  baseMs: number;
  maxMs: number;
}

/** Delay before the retry that follows failed attempt `attempt` (1-based): uniform in [0, min(max, base * 2^(attempt-1))]. */
export function retryDelayMs(attempt: number, policy: BackoffPolicy, random: () => number = Math.random): number {
  const exponent = Math.max(0, attempt - 1);
  // 2^exponent overflows to Infinity for absurd attempt counts; min() keeps the cap.
  const ceiling = Math.min(policy.maxMs, policy.baseMs * 2 ** exponent);
  return Math.floor(random() * ceiling);
}
