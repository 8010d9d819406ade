// Check 5: whether the organization's plan lets it send now: not suspended, and its monthly quota not used up.
//
// The month's usage, when the plan has a quota, comes from memory: every Send answer carries the organization's count
// as of that send's transaction (SendResponse.organization_accepted), and a plan_blocked refusal says the count reached
// the quota. dispatch-svc is asked (GetUsage) only when there is no recent figure: the first send of an organization
// after the gateway starts, or after `usageMemoryTtlMs` without a figure (the usage of an organization that is not
// sending through this replica only grows by other replicas' sends). So a send makes one call to dispatch-svc in steady
// state, and a request over quota is still refused here, before the rate limit counts it. A figure is a lower bound (a
// concurrent transaction may have counted more): requests in flight together, or on other replicas, may pass here with
// the quota used up, and dispatch-svc then refuses them in its transaction (the last word: the quota holds exactly).
import { ExpiringCache } from '@notify/platform';
import type { auth } from '@notify/proto';
import { ApiError } from '../errors/api-error.ts';
import { text } from '../i18n/messages.ts';

/** 403 `plan_blocked`. */
export function planBlocked(cause?: unknown): ApiError {
  return new ApiError(403, 'plan_blocked', text('plan_blocked'), { cause });
}

/** How long a figure of an organization's usage answers check 5 without asking dispatch-svc (each new figure restarts it). */
export const usageMemoryTtlMs = 5_000;
/** Organizations remembered at most (the least recently used go first). */
export const usageMemoryEntries = 10_000;

/** A count and the calendar month (UTC, "YYYY-MM") it was learnt in: a new month starts from a fresh figure. */
interface Figure {
  readonly month: string;
  readonly accepted: number;
}

export interface MonthlyUsageOptions {
  /** GetUsage: the organization's count this month, asked of dispatch-svc. */
  readonly ask: (organizationId: number) => Promise<number>;
  readonly ttlMs?: number;
  readonly maxEntries?: number;
  readonly now?: () => number;
}

/** Messages accepted this calendar month per organization, as last heard from dispatch-svc. */
export class MonthlyUsageMemory {
  readonly #ask: (organizationId: number) => Promise<number>;
  readonly #figures: ExpiringCache<Figure>;
  readonly #now: () => number;
  /** GetUsage calls under way, by organization: concurrent requests of a cold organization share one. */
  readonly #asking = new Map<number, Promise<number>>();

  constructor(options: MonthlyUsageOptions) {
    this.#ask = options.ask;
    this.#now = options.now ?? Date.now;
    this.#figures = new ExpiringCache({ ttlMs: options.ttlMs ?? usageMemoryTtlMs, maxEntries: options.maxEntries ?? usageMemoryEntries, now: this.#now });
  }

  /** The remembered count, or undefined when there is no recent one for this month. */
  remembered(organizationId: number): number | undefined {
    const figure = this.#figures.get(String(organizationId));
    return figure?.month === this.#month() ? figure.accepted : undefined;
  }

  /** The organization's count this month: remembered, or asked of dispatch-svc (and remembered). */
  acceptedThisMonth(organizationId: number): number | Promise<number> {
    const remembered = this.remembered(organizationId);
    if (remembered !== undefined) return remembered;
    const asking = this.#asking.get(organizationId);
    if (asking) return asking;
    const answer = this.#ask(organizationId)
      .then((accepted) => {
        this.record(organizationId, accepted);
        return accepted;
      })
      .finally(() => this.#asking.delete(organizationId));
    this.#asking.set(organizationId, answer);
    return answer;
  }

  /**
   * A count dispatch-svc reported. Counts only grow within a month and every figure is a lower bound, so the higher of
   * this one and the one remembered for the month is kept; either way the entry lives `ttlMs` from now.
   */
  record(organizationId: number, accepted: number): void {
    const month = this.#month();
    const known = this.remembered(organizationId) ?? 0;
    this.#figures.set(String(organizationId), { month, accepted: Math.max(known, accepted) }, this.#figures.ticket());
  }

  #month(): string {
    return new Date(this.#now()).toISOString().slice(0, 7);
  }
}

/**
 * Throws 403 `plan_blocked` when the plan is suspended or the organization already had `monthlyQuota` messages
 * accepted this calendar month (0 = unlimited, and then `acceptedThisMonth` is not asked).
 */
export async function ensurePlanAllowsSend(plan: auth.PlanState__Output | null, acceptedThisMonth: () => number | Promise<number>): Promise<void> {
  if (!plan) return;
  if (plan.suspended) throw planBlocked();
  if (plan.monthlyQuota > 0 && (await acceptedThisMonth()) >= plan.monthlyQuota) throw planBlocked();
}
