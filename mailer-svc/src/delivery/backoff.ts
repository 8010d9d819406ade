// When a deferred message is offered again: exponential backoff with "equal jitter". The ceiling doubles from the base
// up to the maximum, and the delay is drawn from its upper half: replicas retrying after one relay outage spread out
// instead of returning together, yet no retry comes sooner than half the ceiling. With the default maximum of 1 h,
// retries settle at 30-60 min apart, RFC 5321 section 4.5.4.1's "at least 30 minutes" (docs/delivery-guarantees.md).

export interface BackoffPolicy {
  baseMs: number;
  maxMs: number;
}

/** Delay before the retry that follows failed attempt `attempt` (1-based): uniform in [ceiling/2, ceiling], ceiling = min(max, base * 2^(attempt-1)). */
export function retryDelayMs(attempt: number, policy: BackoffPolicy, random: () => number = Math.random): number {
  const exponent = Math.max(0, attempt - 1);
  // 2^exponent overflows to Infinity for absurd attempt counts; min() keeps the cap.
  const ceiling = Math.min(policy.maxMs, policy.baseMs * 2 ** exponent);
  return Math.floor(ceiling / 2 + random() * (ceiling / 2));
}
