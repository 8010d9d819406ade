// DispatchService.GetUsage: the gateway asks it before the rest of a request's checks when the plan has a quota, so that
// a used-up quota is refused in the contract's order (check 5); Send's own count keeps the quota exact.
import { status } from '@grpc/grpc-js';
import { UserError } from '@notify/platform';
import type { Pool } from '@notify/platform/database';
import type { dispatch } from '@notify/proto';
import { currentMonthUsage } from './usage-store.ts';

export async function getUsage(pool: Pool, request: dispatch.GetUsageRequest__Output): Promise<dispatch.Usage__Output> {
  const { organizationId } = request;
  if (!Number.isSafeInteger(organizationId) || organizationId <= 0) {
    throw new UserError(status.INVALID_ARGUMENT, 'invalid_argument', 'organization_id: must be a positive integer', { fields: ['organization_id: must be a positive integer'] });
  }
  const usage = await currentMonthUsage(pool, organizationId);
  return { organizationId, month: usage.month, accepted: usage.accepted };
}
