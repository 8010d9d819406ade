// From an attempt's outcome to the event that records it and what happens to the job: acknowledged, offered again
// after a backoff, or terminated. The mailer, not the consumer's max_deliver, decides when retries are used up: after
// `maxAttempts` attempts or once the delivery is `maxAgeMs` old, whichever comes first.
import type { DeliveryEvent, DeliveryState } from '@notify/proto';
import { type BackoffPolicy, retryDelayMs } from './backoff.ts';
import type { FailureReason } from './metrics.ts';
import { type DeliveryOutcome, isHardBounce } from './smtp-outcome.ts';

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
  event: Pick<DeliveryEvent, 'smtpCode' | 'smtpResponse' | 'reason' | 'suppression'> & { state: Exclude<DeliveryState, 'sending'> };
  settle: Settlement;
}

const units: readonly [string, number][] = [
  ['d', 86_400_000],
  ['h', 3_600_000],
  ['m', 60_000],
  ['s', 1_000],
];

/** `4d`, `90m`, `1500ms`: the largest unit that states the duration exactly, as MAILER_MAX_AGE is written. */
export function formatDuration(ms: number): string {
  const unit = units.find(([, size]) => ms >= size && ms % size === 0);
  return unit ? `${ms / unit[1]}${unit[0]}` : `${ms}ms`;
}

export function judgeAttempt(outcome: DeliveryOutcome, context: AttemptContext, policy: RetryPolicy, random?: () => number): Decision {
  const { kind, ...details } = outcome;
  if (kind === 'accepted') return { event: { state: 'sent', ...details }, settle: { action: 'ack' } };
  if (kind === 'permanent') {
    // A recipient address that does not exist is said so: dispatch-svc suppresses it, and no later send tries it.
    return { event: { state: 'failed', ...details, ...(isHardBounce(outcome) ? { suppression: 'hard_bounce' as const } : {}) }, settle: { action: 'term' } };
  }
  const ending = failureReason(outcome, context, policy);
  if (ending === 'retries_exhausted') {
    return { event: { state: 'failed', ...details, reason: `retries exhausted: ${outcome.reason}` }, settle: { action: 'term' } };
  }
  if (ending === 'too_old') {
    return {
      event: { state: 'failed', ...details, reason: `gave up after ${formatDuration(policy.maxAgeMs)}: ${outcome.reason}` },
      settle: { action: 'term' },
    };
  }
  const remainingMs = policy.maxAgeMs - context.ageMs;
  // The last retry is made when the age limit is reached rather than skipped because the backoff overshoots it.
  const delayMs = Math.min(retryDelayMs(context.attempt, policy, random), remainingMs);
  return { event: { state: 'deferred', ...details }, settle: { action: 'nak', delayMs } };
}

/**
 * Why `judgeAttempt` fails the message after this outcome, as the bounded `reason` label of notify_deliveries_total
 * (metrics.ts); undefined when it does not (sent, or deferred for another attempt). `stage` is where a permanent
 * outcome came from: the relay (`send`), or a template that could not be rendered (`render`), which the delivery turns
 * into a permanent outcome before anything reaches the relay. A temporary refusal fails at the attempt limit first,
 * then at the age limit, as judgeAttempt decides (it asks this function).
 */
export function failureReason(
  outcome: DeliveryOutcome,
  context: AttemptContext,
  policy: RetryPolicy,
  stage: 'render' | 'send' = 'send',
): FailureReason | undefined {
  if (outcome.kind === 'accepted') return undefined;
  if (outcome.kind === 'permanent') return stage === 'render' ? 'render_failed' : 'rejected';
  if (context.attempt >= policy.maxAttempts) return 'retries_exhausted';
  if (policy.maxAgeMs - context.ageMs <= 0) return 'too_old';
  return undefined;
}
