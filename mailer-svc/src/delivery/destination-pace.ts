// How a destination's pace changes, and each replica's part of it (destination-throttle.ts shares it between them).
// A pushback (421, or a 4.7.x enhanced status, not greylisting) halves a domain's concurrency and rate, down to the
// floor of one delivery at once and one message a second (or the configured rate when lower); each step of accepted
// mail adds one delivery and a twentieth of the configured rate, back to the configured limit.
import { evenShare } from '@notify/platform/nats';
import type { DestinationLimit } from './destination-limits.ts';
import { type DeliveryOutcome, enhancedStatus } from './smtp-outcome.ts';

/** A domain's pace below its limit, as the bucket holds it (`changedAt`: epoch ms of the last change). */
export interface Pace {
  readonly concurrency: number;
  readonly perSecond: number;
  readonly changedAt: number;
}

/** At most one decrease, and one increase, per domain in this time. */
export const adjustEveryMs = 1_000;
/** The additive increase, as the part of the configured rate added per step. */
const rateSteps = 20;
/** The lowest rate a pushback brings a domain to (lower only if its configured rate is). */
const floorPerSecond = 1;

/**
 * A reply that says the domain wants less of us: 421 (closing the channel, usually too many connections) or 4.7.x.
 * Greylisting (often 451 4.7.1, its text saying so) is not: it asks for that message again later, not for less mail.
 */
export function isPushback(outcome: DeliveryOutcome): boolean {
  if (outcome.kind !== 'temporary' || /greylist/i.test(outcome.smtpResponse ?? '')) return false;
  return outcome.smtpCode === 421 || (enhancedStatus(outcome.smtpResponse)?.startsWith('4.7.') ?? false);
}

/** The pace after a pushback: half, down to the floor. */
export function slowerPace(pace: Pick<Pace, 'concurrency' | 'perSecond'>, limit: DestinationLimit, now: number): Pace {
  return { concurrency: Math.max(1, Math.floor(pace.concurrency / 2)), perSecond: Math.max(floorOf(limit), pace.perSecond / 2), changedAt: now };
}

/** The pace after a step of accepted mail: one more delivery and a twentieth of the configured rate, up to the limit. */
export function fasterPace(pace: Pick<Pace, 'concurrency' | 'perSecond'>, limit: DestinationLimit, now: number): Pace {
  return {
    concurrency: Math.min(limit.concurrency, pace.concurrency + 1),
    perSecond: Math.min(limit.perSecond, pace.perSecond + limit.perSecond / rateSteps),
    changedAt: now,
  };
}

/** The lowest rate a pushback brings the domain to. */
export function floorOf(limit: DestinationLimit): number {
  return Math.min(limit.perSecond, floorPerSecond);
}

/** Whether a pace is back at the domain's configured limit (or above it). */
export function atLimit(pace: Pick<Pace, 'concurrency' | 'perSecond'>, limit: DestinationLimit): boolean {
  return pace.concurrency >= limit.concurrency && pace.perSecond >= limit.perSecond;
}

/** This replica's part of a domain's pace: its deliveries at once and messages per second. */
export function shareOf(pace: Pick<Pace, 'concurrency' | 'perSecond'>, replicas: number, rank: number): { concurrency: number; perSecond: number } {
  return { concurrency: Math.max(1, evenShare(pace.concurrency, replicas, rank)), perSecond: pace.perSecond / replicas };
}
