// From an attempt's outcome to the event that records it and what happens to the job: acknowledged, offered again
// after a backoff, or terminated. The mailer, not the consumer's max_deliver, decides when retries are used up: after
// `maxAttempts` attempts or once the delivery is `maxAgeMs` old, whichever comes first.
import type { DeliveryEvent } from '@notify/proto';
import { retryDelayMs, type BackoffPolicy } from './backoff.ts';
import type { DeliveryOutcome } from './smtp-outcome.ts';

export interface RetryPolicy extends BackoffPolicy {
  maxAttempts: number;
  /** Age of a delivery (from acceptance, or from its re-queueing) after which a temporary failure is final. */
  maxAgeMs: number;
}

/** Where an attempt stands within its delivery. */
export interface AttemptContext {
  /** 1 for the first attempt of this delivery. */
  attempt: number;
  /** Time since the delivery began: the message's acceptance, or the operator's re-queueing. */
  ageMs: number;
}

export type Settlement = { action: 'ack' } | { action: 'nak'; delayMs: number } | { action: 'term' };

export interface Decision {
  event: Pick<DeliveryEvent, 'state' | 'smtpCode' | 'smtpResponse' | 'reason'>;
  settle: Settlement;
}

const units: readonly [string, number][] = [['d', 86_400_000], ['h', 3_600_000], ['m', 60_000], ['s', 1_000]];

/** `4d`, `90m`, `1500ms`: the largest unit that states the duration exactly, as MAILER_MAX_AGE is written. */
export function formatDuration(ms: number): string {
  const unit = units.find(([, size]) => ms >= size && ms % size === 0);
  return unit ? `${ms / unit[1]}${unit[0]}` : `${ms}ms`;
}

export function decide(outcome: DeliveryOutcome, context: AttemptContext, policy: RetryPolicy, random?: () => number): Decision {
  const { kind, ...details } = outcome;
  if (kind === 'accepted') return { event: { state: 'sent', ...details }, settle: { action: 'ack' } };
  if (kind === 'permanent') return { event: { state: 'failed', ...details }, settle: { action: 'term' } };
  if (context.attempt >= policy.maxAttempts) {
    return { event: { state: 'failed', ...details, reason: `retries exhausted: ${outcome.reason}` }, settle: { action: 'term' } };
  }
  const remainingMs = policy.maxAgeMs - context.ageMs;
  if (remainingMs <= 0) {
    return { event: { state: 'failed', ...details, reason: `gave up after ${formatDuration(policy.maxAgeMs)}: ${outcome.reason}` }, settle: { action: 'term' } };
  }
  // The last retry is made when the age limit is reached rather than skipped because the backoff overshoots it.
  const delayMs = Math.min(retryDelayMs(context.attempt, policy, random), remainingMs);
  return { event: { state: 'deferred', ...details }, settle: { action: 'nak', delayMs } };
}
