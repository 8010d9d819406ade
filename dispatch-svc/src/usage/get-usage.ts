// DispatchService.GetUsage: the gateway asks it for check 5 (a used-up quota refused before the rate and the rest) when
// the plan has a quota and no recent Send answer told it the organization's count; Send's own count keeps the quota exact.
import { status } from '@grpc/grpc-js';
import { UserError } from '@notify/platform';
import type { Pool } from '@notify/platform/database';
import type { dispatch } from '@notify/proto';
import { currentMonthUsage } from './usage-store.ts';

export async function getUsage(pool: Pool, request: dispatch.GetUsageRequest__Output): Promise<dispatch.Usage__Output> {
  const { organizationId } = request;
  if (!Number.isSafeInteger(organizationId) || organizationId <= 0) {
    throw new UserError(status.INVALID_ARGUMENT, 'invalid_argument', 'organization_id: must be a positive integer', {
      fields: ['organization_id: must be a positive integer'],
    });
  }
  const usage = await currentMonthUsage(pool, organizationId);
  return { organizationId, month: usage.month, accepted: usage.accepted };
}
