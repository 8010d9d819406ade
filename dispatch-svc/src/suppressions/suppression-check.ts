// Step 4 of a send: a recipient on the project's suppression list is refused on `to` with the entry's reason and date
// (the gateway words it, docs/contract.md "Recipients that must not be mailed"): it creates nothing and uses no quota.
import { status } from '@grpc/grpc-js';
import { UserError } from '@notify/platform';
import type { PoolClient } from '@notify/platform/database';
import type { DataKey } from '@notify/platform/mail';
import type { BatchVerdicts } from '../messages/batch-verdicts.ts';
import { findSuppressions, type Suppression, suppressionKey } from './suppression-store.ts';

/** One lookup of the list's primary key for the whole batch. */
export async function refuseSuppressedRecipients(client: PoolClient, dataKey: DataKey, batch: BatchVerdicts): Promise<void> {
  const open = batch.open();
  const wanted = open.map((index) => ({ projectId: batch.send(index).request.projectId, address: batch.send(index).request.to }));
  const suppressed = await findSuppressions(client, dataKey, wanted);
  if (suppressed.size === 0) return;
  for (const [position, index] of open.entries()) {
    const { projectId, address } = wanted[position] as { projectId: number; address: string };
    const entry = suppressed.get(suppressionKey(projectId, address));
    if (entry) batch.refuse(index, recipientSuppressed(entry));
  }
}

/** Structured like data_invalid: [reason, date] for the gateway to put in words in the caller's language. */
function recipientSuppressed(entry: Suppression): UserError {
  const since = entry.createdAt.toISOString().slice(0, 10);
  return new UserError(status.FAILED_PRECONDITION, 'recipient_suppressed', `${entry.address} is suppressed (${entry.reason}, since ${since})`, {
    fields: [entry.reason, since],
  });
}
