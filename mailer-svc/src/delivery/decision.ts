// From an attempt's outcome to the event that records it and what happens to the job: acknowledged, offered again
// after a backoff, or terminated. The mailer, not the consumer's max_deliver, decides when attempts are used up.
import type { DeliveryEvent } from '@notify/proto';
import { retryDelayMs, type BackoffPolicy } from './backoff.ts';
import type { DeliveryOutcome } from './smtp-outcome.ts';

export interface RetryPolicy extends BackoffPolicy {
  maxAttempts: number;
}

export type Settlement = { action: 'ack' } | { action: 'nak'; delayMs: number } | { action: 'term' };

export interface Decision {
  event: Pick<DeliveryEvent, 'state' | 'smtpCode' | 'smtpResponse' | 'reason'>;
  settle: Settlement;
}

export function decide(outcome: DeliveryOutcome, attempt: number, policy: RetryPolicy, random?: () => number): Decision {
  const { kind, ...details } = outcome;
  if (kind === 'accepted') return { event: { state: 'sent', ...details }, settle: { action: 'ack' } };
  if (kind === 'permanent') return { event: { state: 'failed', ...details }, settle: { action: 'term' } };
  if (attempt >= policy.maxAttempts) {
    return { event: { state: 'failed', ...details, reason: `retries exhausted: ${outcome.reason}` }, settle: { action: 'term' } };
  }
  return { event: { state: 'deferred', ...details }, settle: { action: 'nak', delayMs: retryDelayMs(attempt, policy, random) } };
}
