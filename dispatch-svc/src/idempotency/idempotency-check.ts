// DispatchService.CheckIdempotency: the contract judges the Idempotency-Key (check 10) before the body's fields (11),
// so the gateway asks here first. Nothing is written; Send judges the key again, under its lock, when it accepts.
import { status } from '@grpc/grpc-js';
import { UserError } from '@notify/platform';
import type { Pool } from '@notify/platform/database';
import type { dispatch } from '@notify/proto';
import type { DispatchMetrics } from '../metrics.ts';
import { toSendResponse } from '../messages/send.ts';
import { peekIdempotencyKey } from './idempotency-store.ts';
import { idempotencyKeyInUse, idempotencyKeyMismatch } from './idempotency-refusals.ts';

const uuidPattern = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

function validate(request: dispatch.CheckIdempotencyRequest__Output): void {
  const faults: string[] = [];
  if (!Number.isSafeInteger(request.projectId) || request.projectId <= 0) faults.push('project_id: must be a positive integer');
  if (!uuidPattern.test(request.idempotencyKey)) faults.push('idempotency_key: must be a UUID');
  if (request.fingerprint === '') faults.push('fingerprint: is required');
  if (faults.length > 0) throw new UserError(status.INVALID_ARGUMENT, 'invalid_argument', `invalid idempotency check: ${faults.join('; ')}`, { fields: faults });
}

export async function checkIdempotency(
  deps: { readonly pool: Pool; readonly metrics: DispatchMetrics },
  request: dispatch.CheckIdempotencyRequest__Output,
): Promise<dispatch.CheckIdempotencyResponse__Output> {
  validate(request);
  const { projectId, fingerprint } = request;
  const key = request.idempotencyKey.toLowerCase();
  // One round trip: the record first, since once the first request committed it answers every later one, whoever
  // holds the lock; without a live record the key is free unless a request holding it is being processed now.
  const { record, free } = await peekIdempotencyKey(deps.pool, { projectId, idempotencyKey: key });
  let replay: dispatch.SendResponse__Output | null = null;
  if (record && !record.expired) {
    if (record.fingerprint !== fingerprint) throw idempotencyKeyMismatch();
    replay = toSendResponse(record.response, true);
  } else if (free !== true) {
    throw idempotencyKeyInUse();
  }
  if (replay) deps.metrics.messagesReplayed.inc();
  return { replay };
}
