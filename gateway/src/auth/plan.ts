// Check 5: whether the organization's plan lets it send now.
import type { auth } from '@notify/proto';
import { ApiError } from '../errors/api-error.ts';
import { text } from '../i18n/messages.ts';

/**
 * Throws 403 `plan_blocked` when the plan refuses more sends. Today that is a suspended plan; the monthly quota
 * (`plan.monthlyQuota`, 0 = unlimited) is enforced in a later issue and belongs here, before the rate limit counts.
 */
export function ensurePlanAllowsSend(plan: auth.PlanState__Output | null): void {
  if (plan?.suspended) throw new ApiError(403, 'plan_blocked', text('plan_blocked'));
}
