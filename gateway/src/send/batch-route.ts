// POST /api/v1/send/batch/: up to 500 sends in one request. Checks 1-6 and 7-9 are the send's (admission.ts, body.ts),
// for the request as a whole; each item is then judged exactly as a send body is, and answered in its own entry of
// `200 {"results": [...]}`: 202 with what a send's 202 carries, or its refusal (docs/integrators.md, "Batch sends").

import { status } from '@grpc/grpc-js';
import { annotateRequestSpan, type Counter } from '@notify/platform';
import type { dispatch } from '@notify/proto';
import type { Middleware, ParameterizedContext } from 'koa';
import type { MonthlyUsageMemory } from '../auth/plan.ts';
import { ApiError, FieldErrors } from '../errors/api-error.ts';
import { renderFields } from '../errors/error-handler.ts';
import type { GatewayState } from '../http/state.ts';
import { text, translate } from '../i18n/messages.ts';
import { rateLimitHeaders } from '../rate-limit/headers.ts';
import { admitSend } from './admission.ts';
import { batchItems, nonFieldErrors, validateBatchItem } from './batch-body.ts';
import { ensureJsonBody, parseJsonObject } from './body.ts';
import { refusalFor, refusalOf } from './dispatch.ts';
import { batchFingerprint } from './fingerprint.ts';
import { parseIdempotencyKey } from './idempotency-key.ts';
import type { SendOutcome } from './outcomes.ts';
import { type SendRouteDeps, sendFields } from './route.ts';
import type { Validation } from './validation.ts';

export interface SendBatchRouteDeps extends SendRouteDeps {
  /** NOTIFY_MAX_BATCH_BODY_BYTES. */
  readonly maxBatchBodyBytes: number;
}

/**
 * An accepted item: a send's 202 body, its `status` ("queued", or "scheduled" with its `send_at`) named `message_status`
 * beside the entry's HTTP status.
 */
export interface AcceptedEntry {
  index: number;
  status: 202;
  message_id: number;
  message_status: string;
  celery_task_id: string;
  idempotent_replay: boolean;
  send_at?: string;
}

/** A refused item: field errors (422), or a stable code with its text under `template` (404) or `non_field_errors`. */
export interface RefusedEntry {
  index: number;
  status: number;
  code?: string;
  errors: Record<string, string[]>;
  /** 429 only: whole seconds until the per-key rate has room again. */
  retry_after?: number;
}

export type BatchEntry = AcceptedEntry | RefusedEntry;

/** notify_send_outcomes_total, for each item of a batch: what it would have been as a send of its own. */
function itemOutcome(entry: BatchEntry): SendOutcome {
  if (entry.status === 202) return (entry as AcceptedEntry).idempotent_replay ? 'replayed' : 'accepted';
  return entry.status === 429 ? 'throttled' : 'refused';
}

export function sendBatchRoute(deps: SendBatchRouteDeps, usage: MonthlyUsageMemory, outcomes: Counter<'outcome'>): Middleware<GatewayState> {
  return async (ctx) => {
    // 1-6, as for a send: the request's own point of the rate is its first item's (429 for all when none is left).
    const { bytes, access, monthlyQuota, rate } = await admitSend(ctx, deps, usage, deps.maxBatchBodyBytes);
    const { keyId, sendRate, organizationId } = access;

    // 7-9, then the batch's shape (422 on `messages`), then the Idempotency-Key header.
    ensureJsonBody(ctx.get('Content-Type') || undefined, ctx.get('Content-Encoding') || undefined);
    const input = parseJsonObject(bytes);
    const items = batchItems(input);
    const idempotencyKey = parseIdempotencyKey(ctx.headers['idempotency-key']);

    // Each item's fields (check 11); those that pass each take one point of the rate, the first ones first, as far as
    // the window goes: the others are throttled. Points of items not accepted in the end are given back below.
    const validations = items.map(validateBatchItem);
    const candidates = validations.flatMap((validation, index) => (validation.valid ? [index] : []));
    const more = candidates.length > 1 ? await deps.rateLimiter.consumeUpTo(keyId, sendRate, candidates.length - 1) : { granted: 0, decision: rate };
    const charged = 1 + more.granted;
    const retryAfter = Math.max(1, more.decision.resetSeconds);

    let answer: dispatch.SendBatchResponse__Output;
    try {
      answer = await deps.dispatch.call('SendBatch', {
        messages: validations.map((validation) => ({
          projectId: access.projectId,
          organizationId,
          apiKeyId: keyId,
          ...sendFields(validation),
          idempotencyKey: '',
          fingerprint: '',
          monthlyQuota,
          test: access.test,
          keyFromDomains: [...access.fromDomains],
        })),
        throttledIndexes: candidates.slice(charged),
        retryAfterSeconds: retryAfter,
        idempotencyKey: idempotencyKey ?? '',
        fingerprint: idempotencyKey === undefined ? '' : batchFingerprint(input, organizationId),
      });
    } catch (error) {
      // Refused as a whole (its Idempotency-Key, or dispatch-svc down): it costs its own point, like a send.
      await deps.rateLimiter.refund(keyId, sendRate, charged - 1);
      throw refusalOf(error);
    }

    // A batch costs one point per accepted item, and at least one (a replay accepts nothing new).
    const accepted = answer.idempotentReplay ? 0 : answer.results.filter((result) => result.outcome === 'accepted').length;
    const refund = charged - Math.max(1, accepted);
    await deps.rateLimiter.refund(keyId, sendRate, refund);
    ctx.set(rateLimitHeaders({ ...more.decision, remaining: Math.min(more.decision.rate.points, more.decision.remaining + refund) }));
    if (monthlyQuota > 0 && answer.organizationAccepted > 0) usage.record(organizationId, answer.organizationAccepted);

    const results = answer.results.map((result, index) => entryOf(ctx, index, result, validations[index] as Validation, retryAfter));
    annotateRequestSpan({ 'notify.batch.items': results.length, 'notify.batch.accepted': accepted });
    for (const entry of results) outcomes.inc({ outcome: itemOutcome(entry) });
    ctx.status = 200;
    if (answer.idempotentReplay) ctx.set('Idempotent-Replayed', 'true');
    ctx.body = { results };
  };
}

function entryOf(
  ctx: ParameterizedContext<GatewayState>,
  index: number,
  result: dispatch.SendBatchResult__Output,
  validation: Validation,
  retryAfter: number,
): BatchEntry {
  if (result.accepted) {
    const { messageId, status: messageStatus, celeryTaskId, idempotentReplay, sendAt } = result.accepted;
    const entry: AcceptedEntry = {
      index,
      status: 202,
      message_id: messageId,
      message_status: messageStatus,
      celery_task_id: celeryTaskId,
      idempotent_replay: idempotentReplay,
    };
    if (sendAt !== '') entry.send_at = sendAt;
    return entry;
  }
  const refused = result.refused ?? { code: status.INTERNAL, reason: 'unknown', fields: [] };
  const { language } = ctx.state;
  if (refused.code === status.RESOURCE_EXHAUSTED && refused.reason === 'throttled') {
    const seconds = Number(refused.fields[0] ?? retryAfter) || retryAfter;
    return { index, status: 429, code: 'throttled', errors: { [nonFieldErrors]: [translate(language, text('throttled', { seconds }))] }, retry_after: seconds };
  }
  // The item's own field errors, when dispatch-svc answers that the gateway refused its fields.
  const fieldErrors = validation.valid ? undefined : new FieldErrors(validation.fields);
  const refusal = refusalFor(refused, fieldErrors);
  if (refusal instanceof FieldErrors) return { index, status: 422, errors: renderFields(refusal.fields, language) };
  // A refusal Send never gives for one message is a fault of the gateway or dispatch-svc, not of the item.
  if (!(refusal instanceof ApiError) || refusal.status >= 500 || refusal.code === undefined) throw refusal;
  const field = refusal.code === 'template_not_found' ? 'template' : nonFieldErrors;
  return { index, status: refusal.status, code: refusal.code, errors: { [field]: [translate(language, refusal.detail)] } };
}
