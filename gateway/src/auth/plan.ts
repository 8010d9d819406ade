// Check 5: whether the organization's plan lets it send now: not suspended, and its monthly quota not used up.
import type { auth } from '@notify/proto';
import { ApiError } from '../errors/api-error.ts';
import { text } from '../i18n/messages.ts';

/** 403 `plan_blocked`. */
export function planBlocked(cause?: unknown): ApiError {
  return new ApiError(403, 'plan_blocked', text('plan_blocked'), { cause });
}

/**
 * Throws 403 `plan_blocked` when the plan is suspended or the organization already had `monthlyQuota` messages
 * accepted this calendar month (0 = unlimited, and then `acceptedThisMonth` is not asked). Requests in flight together
 * may all pass here; dispatch-svc counts each accepted one in its transaction and refuses past the quota, so the quota
 * holds exactly and this early answer only keeps the contract's order of checks.
 */
export async function ensurePlanAllowsSend(plan: auth.PlanState__Output | null, acceptedThisMonth: () => Promise<number>): Promise<void> {
  if (!plan) return;
  if (plan.suspended) throw planBlocked();
  if (plan.monthlyQuota > 0 && (await acceptedThisMonth()) >= plan.monthlyQuota) throw planBlocked();
}
