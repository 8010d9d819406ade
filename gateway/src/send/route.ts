// POST /api/v1/send/: the contract's checks in its exact order, first failure wins (docs/contract.md, "Order of checks").
// Each step throws; the error handler renders.

import { annotateRequestSpan, notifyAttributes } from '@notify/platform';
import type { AcceptedBody, dispatch } from '@notify/proto';
import type { Middleware, ParameterizedContext } from 'koa';
import type { AuthClient } from '../auth/authorize.ts';
import type { BruteForceGuard } from '../auth/brute-force-guard.ts';
import type { CachedAuthorizer } from '../auth/cached-authorizer.ts';
import { MonthlyUsageMemory } from '../auth/plan.ts';
import { ApiError, FieldErrors } from '../errors/api-error.ts';
import type { GatewayState } from '../http/state.ts';
import type { SendRateLimiter } from '../rate-limit/limiter.ts';
import { admitSend } from './admission.ts';
import { ensureJsonBody, parseJsonObject } from './body.ts';
import { acceptedThisMonth, type DispatchClient, dispatchSend, type SendAnswer } from './dispatch.ts';
import { sendFingerprint } from './fingerprint.ts';
import { parseIdempotencyKey } from './idempotency-key.ts';
import { labelFields } from './labels.ts';
import { ReplayMemory } from './replay-memory.ts';
import type { SendDispatcher } from './send-many.ts';
import { parseFrom, sendAtOf, type Validation, validateSendBody } from './validation.ts';

export interface SendRouteDeps {
  readonly auth: AuthClient;
  /** Accepted keys answered from memory (AUTH_CACHE_TTL); absent, every request asks auth-svc. */
  readonly authorizations?: CachedAuthorizer;
  readonly dispatch: DispatchClient;
  readonly rateLimiter: SendRateLimiter;
  /** Limits failed authentications per client address (NOTIFY_AUTH_FAILURE_RATE); absent, they are not limited. */
  readonly bruteForce?: BruteForceGuard;
  /** NOTIFY_MAX_BODY_BYTES. */
  readonly maxBodyBytes: number;
}

/**
 * One Send to dispatch-svc per request in steady state, after checks 1-9, carried by `sends` with the requests that came
 * together (GetUsage too, for check 5, only when the plan has a quota and no recent Send answer told this gateway the
 * organization's count: see auth/plan.ts).
 */
export function sendRoute(
  deps: SendRouteDeps,
  sends: SendDispatcher,
  usage: MonthlyUsageMemory = monthlyUsageMemory(deps.dispatch),
  replays: ReplayMemory = new ReplayMemory(),
): Middleware<GatewayState> {
  return async (ctx) => {
    // 1-6. Size, key, organization, plan, rate.
    const { bytes, access, monthlyQuota } = await admitSend(ctx, deps, usage, deps.maxBodyBytes);
    const { organizationId } = access;

    // 7-9. Media type, JSON object, Idempotency-Key.
    ensureJsonBody(ctx.get('Content-Type') || undefined, ctx.get('Content-Encoding') || undefined);
    const input = parseJsonObject(bytes);
    const idempotencyKey = parseIdempotencyKey(ctx.headers['idempotency-key']);
    // The fingerprint, with a key, is the parsed body as sent, valid or not.
    const fingerprint = idempotencyKey === undefined ? '' : sendFingerprint(input, organizationId);

    // 10, when this replica saw the key's live record answered: the same body is a replay (replay-memory.ts).
    const remembered = idempotencyKey === undefined ? undefined : replays.replay(access.projectId, idempotencyKey, fingerprint);
    if (remembered) {
      accept(ctx, remembered);
      return;
    }

    // 11, judged here but answered in order: with an Idempotency-Key its record (check 10) comes first, so dispatch-svc
    // is told the verdict and answers a replay, 409 or 422 mismatch before it; without one, there is nothing to ask.
    const validation = validateSendBody(input);
    const fieldErrors = validation.valid ? undefined : new FieldErrors(validation.fields);
    if (fieldErrors && idempotencyKey === undefined) throw fieldErrors;

    // 10-14 in dispatch-svc, one call, one transaction: the key's record, then the fields' verdict, the template, the
    // data and the quota (counted against it, exactly).
    const fields = sendFields(validation);
    const asked = replays.ask();
    let answer: SendAnswer;
    try {
      answer = await dispatchSend(
        sends,
        {
          projectId: access.projectId,
          organizationId,
          apiKeyId: access.keyId,
          ...fields,
          idempotencyKey: idempotencyKey ?? '',
          // Compared only on a replay of the same key: without one, dispatch-svc neither stores nor reads it.
          fingerprint,
          monthlyQuota,
          test: access.test,
          keyFromDomains: [...access.fromDomains],
        },
        fieldErrors,
      );
    } catch (error) {
      // The quota was used up by requests that passed check 5 together with this one: the next ones stop at check 5.
      if (monthlyQuota > 0 && error instanceof ApiError && error.code === 'plan_blocked') usage.record(organizationId, monthlyQuota);
      throw error;
    }
    if (monthlyQuota > 0 && answer.organizationAccepted > 0) usage.record(organizationId, answer.organizationAccepted);
    if (idempotencyKey !== undefined) replays.remember(access.projectId, idempotencyKey, fingerprint, answer.accepted, answer.replayableForMs, asked);
    accept(ctx, answer.accepted);
  };
}

/** A body's fields as Send takes them, for a send and for each item of a batch; nothing of an invalid body is sent. */
export function sendFields(
  validation: Validation,
): Pick<dispatch.SendRequest, 'template' | 'to' | 'dataJson' | 'fieldsInvalid' | 'tags' | 'metadataJson' | 'sendAt' | 'fromAddress' | 'fromName'> {
  const from = validation.valid && validation.body.from !== undefined ? parseFrom(validation.body.from) : undefined;
  return validation.valid
    ? {
        template: validation.body.template,
        to: validation.body.to,
        dataJson: JSON.stringify(validation.body.data),
        fieldsInvalid: false,
        ...labelFields(validation.body),
        sendAt: sendAtOf(validation.body),
        fromAddress: from?.address ?? '',
        fromName: from?.name ?? '',
      }
    : { template: '', to: '', dataJson: '', fieldsInvalid: true, sendAt: '' };
}

/** What check 5 remembers of each organization's month; the single and the batch send share one. */
export function monthlyUsageMemory(dispatch: DispatchClient): MonthlyUsageMemory {
  return new MonthlyUsageMemory({ ask: (organizationId) => acceptedThisMonth(dispatch, organizationId) });
}

function accept(ctx: ParameterizedContext<GatewayState>, body: AcceptedBody): void {
  annotateRequestSpan({ [notifyAttributes.messageId]: body.message_id });
  ctx.status = 202;
  if (body.idempotent_replay) ctx.set('Idempotent-Replayed', 'true');
  ctx.body = body;
}
