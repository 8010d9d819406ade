// DispatchService.SendBatch, the call behind POST /api/v1/send/batch/: every item judged by Send's own steps
// (acceptBatch: template, data, suppression, quota, in that order, the first items of an organization counted first),
// all of them in one transaction with the batch's Idempotency-Key record, so the accepted items commit together or not
// at all. A refused item is an entry of the answer, never a failure of the call. Each accepted message gets its own
// `create` span under this call's span (acceptBatch's), so every delivery still continues the request's trace.
import { status } from '@grpc/grpc-js';
import { activeContext, annotateRequestSpan, UserError } from '@notify/platform';
import { type PoolClient, withTransaction } from '@notify/platform/database';
import type { dispatch } from '@notify/proto';
import { idempotencyKeyInUse, idempotencyKeyMismatch } from '../idempotency/idempotency-refusals.ts';
import {
  findIdempotencyRecords,
  type ProjectKey,
  projectKeyId,
  type StoredResponse,
  saveIdempotencyRecords,
  tryLockIdempotencyKeys,
} from '../idempotency/idempotency-store.ts';
import type { OutgoingJob } from '../outbox/delivery-job.ts';
import type { PublishAccepted } from '../outbox/publish-accepted.ts';
import type { Outcome, Pending } from './batch-verdicts.ts';
import { acceptBatch, type SendDeps, sendSpecificFailure, toSendResponse } from './send.ts';
import { uuidPattern, validate } from './send-request.ts';

/** Items of one batch at most (the public API's limit, docs/integrators.md "Batch sends"). */
export const maxBatchItems = 500;

export type SendBatchHandler = (request: dispatch.SendBatchRequest__Output) => Promise<dispatch.SendBatchResponse__Output>;

/** A batch's answer, as its key's record stores it, and one item of it: its 202 body, or its refusal. */
type BatchAnswer = Extract<StoredResponse, { readonly batch: unknown }>;
type BatchItem = BatchAnswer['batch'][number];

interface Judged {
  readonly replay: boolean;
  readonly answer: BatchAnswer;
  /** Accepted items' jobs, published after the commit. */
  readonly outgoing: readonly OutgoingJob[];
  /** The organization's count of messages this month once the batch's were counted (0 for a replay). */
  readonly organizationAccepted: number;
}

function invalid(fault: string): UserError {
  return new UserError(status.INVALID_ARGUMENT, 'invalid_argument', `invalid send batch: ${fault}`, { fields: [fault] });
}

/** What the batch as a whole must be; each item is then checked by Send's own validation. */
function validateBatch(request: dispatch.SendBatchRequest__Output): { key: ProjectKey | null; pending: Map<number, Pending> } {
  const count = request.messages.length;
  if (count < 1 || count > maxBatchItems) throw invalid(`messages: must hold 1-${maxBatchItems} items`);
  if (request.throttledIndexes.some((index) => index >= count)) throw invalid('throttled_indexes: must name items of the batch');
  const key = request.idempotencyKey;
  if (key !== '' && !uuidPattern.test(key)) throw invalid('idempotency_key: must be a UUID');
  if (key !== '' && request.fingerprint === '') throw invalid('fingerprint: is required with an idempotency key');
  const projects = new Set(request.messages.map((item) => item.projectId));
  if (projects.size !== 1) throw invalid('messages: must all belong to one project');
  if (request.messages.some((item) => item.idempotencyKey !== '' || item.fingerprint !== ''))
    throw invalid('messages: items carry no idempotency key of their own');
  const throttled = new Set(request.throttledIndexes);
  const context = activeContext();
  const pending = new Map<number, Pending>();
  request.messages.forEach((item, index) => {
    const input = validate(item);
    if (!throttled.has(index)) pending.set(index, { request: item, input, context });
  });
  const projectId = request.messages[0]?.projectId ?? 0;
  return { key: key === '' ? null : { projectId, idempotencyKey: key.toLowerCase() }, pending };
}

/** The batch's key, judged like Send's (check 10): in use, a replay of the stored answer, a mismatch, or free. */
async function judgeBatchKey(client: PoolClient, key: ProjectKey, fingerprint: string): Promise<BatchAnswer | undefined> {
  const [lock] = await tryLockIdempotencyKeys(client, [key]);
  if (!lock?.locked) throw idempotencyKeyInUse();
  // A live record the lock's statement saw is final; without one, read again now that the lock is held.
  const record = lock.live ?? (await findIdempotencyRecords(client, [key])).get(projectKeyId(key));
  if (!record || record.expired) return undefined;
  // A send's record under the same key has another fingerprint (another body): a mismatch, like any other.
  if (record.fingerprint !== fingerprint) throw idempotencyKeyMismatch();
  return record.response as BatchAnswer;
}

function storedItem(result: PromiseSettledResult<Outcome> | undefined): BatchItem {
  if (result?.status === 'fulfilled') return { accepted: result.value.response };
  const reason: unknown = result?.reason;
  // Anything but a refusal Send documents is a fault of the batch, not of the item: the transaction is abandoned.
  if (!(reason instanceof UserError)) throw reason ?? new Error('a batch item was left without a verdict');
  return { refused: { code: reason.status, reason: reason.reason, fields: [...reason.fields] } };
}

/** An item whose rows the database refuses (jsonb cannot hold U+0000, which JSON can): a 422 on its `data`. */
const unstorable: BatchItem = { refused: { code: status.INVALID_ARGUMENT, reason: 'data_unstorable', fields: [] } };

/** Rolls back a probe's transaction once it has run. */
class Probed extends Error {}

/**
 * The items the database refuses on their own, each tried alone in a transaction that is rolled back: only when the
 * batch's transaction failed for something one item can cause, so that the others are still accepted together.
 */
async function findUnstorable(deps: SendDeps, pending: ReadonlyMap<number, Pending>): Promise<Set<number>> {
  const found = new Set<number>();
  for (const [index, item] of pending) {
    try {
      await withTransaction(deps.pool, async (client) => {
        await acceptBatch(client, deps, [item]);
        throw new Probed();
      });
    } catch (error) {
      if (error instanceof Probed) continue;
      if (!isSendSpecific(error)) throw error;
      found.add(index);
    }
  }
  return found;
}

const isSendSpecific = (error: unknown): boolean => {
  const code = (error as { code?: unknown } | null)?.code;
  return typeof code === 'string' && sendSpecificFailure.test(code);
};

async function judgeInTransaction(deps: SendDeps, request: dispatch.SendBatchRequest__Output): Promise<Judged> {
  const { key, pending } = validateBatch(request);
  try {
    return await judgeOnce(deps, request, key, pending, new Set());
  } catch (error) {
    if (!isSendSpecific(error)) throw error;
    const refused = await findUnstorable(deps, pending);
    if (refused.size === 0) throw error;
    deps.logger.warn({ err: error, items: refused.size }, 'items of a batch refused by the database; accepting the others');
    return judgeOnce(deps, request, key, pending, refused);
  }
}

async function judgeOnce(
  deps: SendDeps,
  request: dispatch.SendBatchRequest__Output,
  key: ProjectKey | null,
  all: ReadonlyMap<number, Pending>,
  refused: ReadonlySet<number>,
): Promise<Judged> {
  const pending = new Map([...all].filter(([index]) => !refused.has(index)));
  return withTransaction(deps.pool, async (client) => {
    if (key) {
      const stored = await judgeBatchKey(client, key, request.fingerprint);
      if (stored) return { replay: true, answer: stored, outgoing: [], organizationAccepted: 0 };
    }
    const indexes = [...pending.keys()];
    const settled = await acceptBatch(client, deps, [...pending.values()]);
    const verdicts = new Map(indexes.map((index, position) => [index, settled[position]]));
    const throttled: BatchItem = { refused: { code: status.RESOURCE_EXHAUSTED, reason: 'throttled', fields: [String(request.retryAfterSeconds)] } };
    const answer: BatchAnswer = {
      batch: request.messages.map((_, index) => (verdicts.has(index) ? storedItem(verdicts.get(index)) : refused.has(index) ? unstorable : throttled)),
    };
    const fresh = settled.flatMap((result) => (result.status === 'fulfilled' && !result.value.replay ? [result.value] : []));
    // A scheduled item has no job to publish: it waits in the schedule for the releaser.
    const outgoing = fresh.flatMap((outcome) => (outcome.outgoing ? [outcome.outgoing] : []));
    const organizationAccepted = Math.max(0, ...fresh.map((outcome) => outcome.organizationAccepted));
    if (key) await saveIdempotencyRecords(client, [{ ...key, fingerprint: request.fingerprint, messageId: null, response: answer }], deps.idempotencyTtlMs);
    return { replay: false, answer, outgoing, organizationAccepted };
  });
}

function toResult(item: BatchItem, replay: boolean): dispatch.SendBatchResult__Output {
  if ('accepted' in item) return { accepted: toSendResponse(item.accepted, replay, 0), outcome: 'accepted' };
  return { refused: item.refused, outcome: 'refused' };
}

export function createSendBatchHandler(deps: SendDeps, publishDirect: PublishAccepted): SendBatchHandler {
  return async (request) => {
    const { replay, answer, outgoing, organizationAccepted } = await judgeInTransaction(deps, request);
    const accepted = answer.batch.filter((item) => 'accepted' in item).length;
    annotateRequestSpan({ 'notify.batch.items': answer.batch.length, 'notify.batch.accepted': accepted });
    if (replay) {
      deps.metrics.messagesReplayed.inc(accepted);
      return { results: answer.batch.map((item) => toResult(item, true)), idempotentReplay: true, organizationAccepted: 0 };
    }
    deps.metrics.messagesAccepted.inc(accepted);
    await Promise.all(outgoing.map(publishDirect));
    return { results: answer.batch.map((item) => toResult(item, false)), idempotentReplay: false, organizationAccepted };
  };
}
