// Step 1 of a send (the contract's check 10): its Idempotency-Key, judged for every send of a batch at once.
import type { PoolClient } from '@notify/platform/database';
import type { AcceptedBody } from '@notify/proto';
import type { BatchVerdicts } from '../messages/batch-verdicts.ts';
import { idempotencyKeyInUse, idempotencyKeyMismatch } from './idempotency-refusals.ts';
import { findIdempotencyRecords, type IdempotencyRecord, type ProjectKey, projectKeyId, tryLockIdempotencyKeys } from './idempotency-store.ts';

/** The open sends that carry a key, one per key: a later send of the batch with a key already taken is in use (409). */
function keyedSends(batch: BatchVerdicts): number[] {
  const keyed = new Map<string, number>();
  for (const index of batch.open()) {
    const { request, input } = batch.send(index);
    if (input.idempotencyKey === null) continue;
    const id = projectKeyId({ projectId: request.projectId, idempotencyKey: input.idempotencyKey });
    if (keyed.has(id)) batch.refuse(index, idempotencyKeyInUse());
    else keyed.set(id, index);
  }
  return [...keyed.values()];
}

/**
 * Each Idempotency-Key's lock, taken without waiting (a key another transaction holds, or that an earlier send of this
 * batch holds, is in use: 409), then the live records of the keys held: the same fingerprint is a replay of the stored
 * response, another one a mismatch. A live record the lock's statement saw is final; the keys it saw none for are read
 * again, after the locks (tryLockIdempotencyKeys).
 */
export async function judgeIdempotencyKeys(client: PoolClient, batch: BatchVerdicts): Promise<void> {
  const candidates = keyedSends(batch);
  if (candidates.length === 0) return;
  const keyOf = (index: number): ProjectKey => ({
    projectId: batch.send(index).request.projectId,
    idempotencyKey: batch.send(index).input.idempotencyKey ?? '',
  });
  const judge = (index: number, record: IdempotencyRecord): void => {
    if (record.fingerprint === batch.send(index).request.fingerprint)
      batch.answer(index, { replay: true, response: record.response as AcceptedBody, replayableForMs: record.remainingMs });
    else batch.refuse(index, idempotencyKeyMismatch());
  };
  const locks = await tryLockIdempotencyKeys(client, candidates.map(keyOf));
  const unseen = candidates.filter((index, position) => {
    const lock = locks[position];
    if (!lock?.locked) batch.refuse(index, idempotencyKeyInUse());
    else if (lock.live) judge(index, lock.live);
    return lock?.locked === true && lock.live === undefined;
  });
  // A statement of its own, after the locks: it sees what a request that held one of them committed.
  if (unseen.length === 0) return;
  const records = await findIdempotencyRecords(client, unseen.map(keyOf));
  for (const index of unseen) {
    const record = records.get(projectKeyId(keyOf(index)));
    if (record && !record.expired) judge(index, record);
  }
}
