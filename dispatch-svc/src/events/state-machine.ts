// The forward-only message lifecycle of docs/contract.md ("Message lifecycle") as a pure decision: given what the message row holds and one
// delivery event, does the row move, and to what. Persisting the decision is event-store.ts's job.
import type { DeliveryEvent, DeliveryState } from '@notify/proto';

/** A report about a delivered message (reports/report-store.ts): only a `sent` message moves to one of these. */
export type ReportState = 'bounced' | 'complained';

/** A scheduled send (`send_at`) before it is due, and one its caller canceled then (scheduled/schedule-store.ts). */
export type ScheduleState = 'scheduled' | 'canceled';

export type MessageState = 'queued' | DeliveryState | ReportState | ScheduleState;

export const messageStates: readonly MessageState[] = ['scheduled', 'queued', 'sending', 'deferred', 'sent', 'failed', 'bounced', 'complained', 'canceled'];

/**
 * Position of a state within one delivery attempt. Events are ordered by (attempt, rank): a `deferred` of attempt 1
 * comes after its `sending`, and the `sending` of attempt 2 after both. `sent` and `failed` share the top rank.
 */
const rank: Readonly<Record<MessageState, number>> = {
  scheduled: -1,
  queued: 0,
  sending: 1,
  deferred: 2,
  sent: 3,
  failed: 3,
  bounced: 4,
  complained: 4,
  canceled: 5,
};

/** No delivery event moves a message out of these; only a report moves a `sent` one on (see `report`). */
export function isTerminal(state: MessageState): boolean {
  return state === 'sent' || state === 'failed' || state === 'bounced' || state === 'complained' || state === 'canceled';
}

/**
 * Only a `scheduled` message (a send with `send_at`, not yet due) can be canceled: it has no job yet, so taking it back
 * needs no one else's cooperation. From `queued` on, a job exists and the message is the mailer's (not_cancelable).
 * The other way out of `scheduled` is the releaser's `queued` when it is due (scheduled/releaser.ts); no delivery
 * event reaches a scheduled message, since it has no job.
 */
export function isCancelable(state: MessageState): boolean {
  return state === 'scheduled';
}

/**
 * What a bounce or complaint report does to a message in `state`: `move` from `sent`; `done` (nothing changes) when a
 * report already moved it, or when the message failed (the relay never took it, or the mailer gave up on an attempt
 * the relay did take: either way the message stays failed); `early` while it is still on its way (the reporter retries).
 */
export function reportEffect(state: MessageState): 'move' | 'done' | 'early' {
  if (state === 'sent') return 'move';
  if (state === 'bounced' || state === 'complained' || state === 'failed' || state === 'canceled') return 'done';
  return 'early';
}

/** The fields of a message row that the lifecycle reads and writes. */
export interface MessageProgress {
  readonly state: MessageState;
  /** Attempt of the last applied event; 0 while queued. Together with the state's rank, the row's ordering key. */
  readonly stateAttempt: number;
  readonly attempts: number;
  readonly lastSmtpCode: number | null;
  readonly lastSmtpResponse: string | null;
  readonly failureReason: string | null;
}

export type Decision =
  | { readonly apply: true; readonly next: MessageProgress }
  /** `terminal`: the message is already sent or failed; `stale`: the event is not after the last applied one (late or repeated). */
  | { readonly apply: false; readonly why: 'terminal' | 'stale' };

type EventFacts = Pick<DeliveryEvent, 'state' | 'attempt' | 'smtpCode' | 'smtpResponse' | 'reason'>;

function isAfter(event: EventFacts, current: MessageProgress): boolean {
  // Queued opens a delivery: every attempt up to its stateAttempt belongs to earlier deliveries (0 for a new message,
  // the last attempt seen for a re-queued one), so only a later attempt moves it.
  if (current.state === 'queued') return event.attempt > current.stateAttempt;
  if (event.attempt !== current.stateAttempt) return event.attempt > current.stateAttempt;
  return rank[event.state] > rank[current.state];
}

/**
 * An operator re-queueing a failed message opens a new delivery: queued again, with the ordering key moved to the last
 * attempt any event of the earlier deliveries carried (`lastAttempt`). Events of those deliveries, however late, are
 * then stale, and the new delivery's attempts, numbered from lastAttempt + 1, move the message forward as before.
 * Returns undefined for a message that has not failed: only a dead letter can be re-queued.
 */
export function reopen(current: MessageProgress, lastAttempt: number): MessageProgress | undefined {
  if (current.state !== 'failed') return undefined;
  // The failure's reply stays readable; the reason goes, since the message is no longer failed.
  return { ...current, state: 'queued', stateAttempt: Math.max(lastAttempt, current.stateAttempt), failureReason: null };
}

/**
 * The lifecycle order of two events of one message: by attempt, then by the state's rank. Applying a message's events
 * in this order moves it as far as they allow and keeps the reply and reason of the latest step; `sent` and `failed`
 * of one attempt compare equal, so which of them counts is left to the caller (the one received first).
 */
export function compareLifecycle(a: { state: MessageState; attempt: number }, b: { state: MessageState; attempt: number }): number {
  return a.attempt - b.attempt || rank[a.state] - rank[b.state];
}

/** Whether `event` moves the message forward, and to what; it never moves a terminal message nor moves one backwards. */
export function advance(current: MessageProgress, event: EventFacts): Decision {
  if (isTerminal(current.state)) return { apply: false, why: 'terminal' };
  if (!isAfter(event, current)) return { apply: false, why: 'stale' };
  // A `sending` event carries no SMTP reply: the row keeps the last one seen, which is what an operator wants to read.
  const hasReply = event.smtpCode !== undefined || event.smtpResponse !== undefined;
  return {
    apply: true,
    next: {
      state: event.state,
      stateAttempt: event.attempt,
      attempts: Math.max(current.attempts, event.attempt),
      lastSmtpCode: hasReply ? (event.smtpCode ?? null) : current.lastSmtpCode,
      lastSmtpResponse: hasReply ? (event.smtpResponse ?? null) : current.lastSmtpResponse,
      // A delivered message has no failure; while retrying, the reason of the last deferral stays visible.
      failureReason: event.state === 'sent' ? null : (event.reason ?? current.failureReason),
    },
  };
}
