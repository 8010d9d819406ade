// Step 6 of a send, the last: the month's usage, per organization, against its plan's quota (judged for the contract
// before all other checks by the gateway, check 5, and counted here so that a refused send uses none of it).
import { status } from '@grpc/grpc-js';
import { UserError } from '@notify/platform';
import type { PoolClient } from '@notify/platform/database';
import type { BatchVerdicts, Written } from '../messages/batch-verdicts.ts';
import { deleteMessages } from '../messages/message-store.ts';
import { grantUsage, type UsageRequest } from './usage-store.ts';

/** What each organization of the batch asks for: one message per written send, under the strictest quota its sends carry. */
function usageRequests(batch: BatchVerdicts, written: readonly Written[]): UsageRequest[] {
  const perOrganization = new Map<number, { wanted: number; monthlyQuota: number }>();
  for (const { index } of written) {
    const { organizationId, monthlyQuota } = batch.send(index).request;
    const entry = perOrganization.get(organizationId) ?? { wanted: 0, monthlyQuota };
    // Sends of one organization carry the same plan unless it just changed; the strictest quota then applies.
    const strictest = entry.monthlyQuota === 0 ? monthlyQuota : monthlyQuota === 0 ? entry.monthlyQuota : Math.min(entry.monthlyQuota, monthlyQuota);
    perOrganization.set(organizationId, { wanted: entry.wanted + 1, monthlyQuota: strictest });
  }
  return [...perOrganization].map(([organizationId, entry]) => ({ organizationId, ...entry }));
}

/**
 * The first sends of the batch are counted first; each accepted send learns its organization's count, which the gateway
 * remembers for check 5. Last, so that each organization's usage row stays locked only until the commit right after
 * (concurrent batches wait on it); the rows of a send the quota refuses go again with their message (the foreign keys
 * cascade), unseen by anyone.
 */
export async function countMonthlyUsage(client: PoolClient, batch: BatchVerdicts, allWritten: readonly Written[]): Promise<void> {
  // A test key's message never counts (its send was still judged against the plan, check 5, like any other): it is
  // accepted as it is, with no month count for the gateway to remember.
  const written = allWritten.filter(({ index, response, outgoing }) => {
    if (!batch.send(index).request.test) return true;
    batch.answer(index, { replay: false, response, outgoing, organizationAccepted: 0 });
    return false;
  });
  if (written.length === 0) return;
  const grants = await grantUsage(client, usageRequests(batch, written));
  const left = new Map([...grants].map(([organizationId, grant]) => [organizationId, grant.granted]));
  const overQuota: number[] = [];
  for (const { index, messageId, response, outgoing } of written) {
    const { organizationId } = batch.send(index).request;
    const remaining = left.get(organizationId) ?? 0;
    if (remaining > 0) {
      left.set(organizationId, remaining - 1);
      batch.answer(index, { replay: false, response, outgoing, organizationAccepted: grants.get(organizationId)?.accepted ?? 0 });
      continue;
    }
    batch.refuse(index, new UserError(status.FAILED_PRECONDITION, 'plan_blocked', "the organization's monthly quota is used up"));
    overQuota.push(messageId);
  }
  if (overQuota.length > 0) await deleteMessages(client, overQuota);
}
