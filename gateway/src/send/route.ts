// POST /api/v1/send/: the contract's checks in its exact order, first failure wins (docs/contract.md, "Order of checks").
// Each step throws; the error handler renders.
import type { Middleware, ParameterizedContext } from 'koa';
import { annotateRequestSpan, notifyAttributes } from '@notify/platform';
import { authenticate } from '../auth/authenticate.ts';
import type { AuthClient } from '../auth/authorize.ts';
import type { BruteForceGuard } from '../auth/brute-force-guard.ts';
import type { CachedAuthorizer } from '../auth/cached-authorizer.ts';
import { parseAuthorization } from '../auth/authorization-header.ts';
import { parseOrganizationId } from '../auth/organization-header.ts';
import { ensurePlanAllowsSend, MonthlyUsageMemory } from '../auth/plan.ts';
import { ApiError, FieldErrors } from '../errors/api-error.ts';
import type { GatewayState } from '../http/state.ts';
import { rateLimitHeaders, throttled } from '../rate-limit/headers.ts';
import type { SendRateLimiter } from '../rate-limit/limiter.ts';
import { ensureJsonBody, parseJsonObject, readBody } from './body.ts';
import { acceptedThisMonth, dispatchSend, type AcceptedBody, type DispatchClient, type SendAnswer } from './dispatch.ts';
import { sendFingerprint } from './fingerprint.ts';
import { parseIdempotencyKey } from './idempotency-key.ts';
import { labelFields } from './labels.ts';
import { sendAtOf, validateSendBody } from './validation.ts';

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
 * One call to dispatch-svc per request in steady state: Send, after checks 1-9 (GetUsage too, for check 5, only when
 * the plan has a quota and no recent Send answer told this gateway the organization's count: see auth/plan.ts).
 */
export function sendRoute(deps: SendRouteDeps): Middleware<GatewayState> {
  const usage = new MonthlyUsageMemory({ ask: (organizationId) => acceptedThisMonth(deps.dispatch, organizationId) });
  return async (ctx) => {
    // 1. Size, before anything else: a chunked body is read here, under the limit, so 413 wins for it too.
    const bytes = await readBody(ctx.req, deps.maxBodyBytes);

    // 2-4. Key, organization header, key's organization: one Authorize call (or its cached acceptance), mapped in the
    // contract's order. Failed attempts are limited per client address.
    const credential = parseAuthorization(ctx.get('Authorization') || undefined);
    const organization = parseOrganizationId(ctx.get('X-Organization-ID') || undefined);
    const access = await authenticate(deps, ctx.ip, credential, organization);
    ctx.state.keyId = access.keyId;

    // 5. Plan: suspension, and the month's usage when the plan has a quota (remembered from dispatch-svc's answers).
    const { organizationId } = access;
    const monthlyQuota = access.plan?.monthlyQuota ?? 0;
    await ensurePlanAllowsSend(access.plan, () => usage.acceptedThisMonth(organizationId));

    // 6. Rate: from here on the request counts, whatever happens after.
    const decision = await deps.rateLimiter.consume(access.keyId, access.sendRate);
    ctx.set(rateLimitHeaders(decision));
    if (!decision.allowed) throw throttled(decision);

    // 7-9. Media type, JSON object, Idempotency-Key.
    ensureJsonBody(ctx.get('Content-Type') || undefined, ctx.get('Content-Encoding') || undefined);
    const input = parseJsonObject(bytes);
    const idempotencyKey = parseIdempotencyKey(ctx.headers['idempotency-key']);

    // 11, judged here but answered in order: with an Idempotency-Key its record (check 10) comes first, so dispatch-svc
    // is told the verdict and answers a replay, 409 or 422 mismatch before it; without one, there is nothing to ask.
    const validation = validateSendBody(input);
    const fieldErrors = validation.valid ? undefined : new FieldErrors(validation.fields);
    if (fieldErrors && idempotencyKey === undefined) throw fieldErrors;

    // 10-14 in dispatch-svc, one call, one transaction: the key's record, then the fields' verdict, the template, the
    // data and the quota (counted against it, exactly). The fingerprint, with a key, is the parsed body as sent, valid or not.
    const fields = validation.valid
      ? { template: validation.body.template, to: validation.body.to, dataJson: JSON.stringify(validation.body.data), fieldsInvalid: false, ...labelFields(validation.body), sendAt: sendAtOf(validation.body) }
      : { template: '', to: '', dataJson: '', fieldsInvalid: true, sendAt: '' };
    let answer: SendAnswer;
    try {
      answer = await dispatchSend(
        deps.dispatch,
        {
          projectId: access.projectId,
          organizationId,
          apiKeyId: access.keyId,
          ...fields,
          idempotencyKey: idempotencyKey ?? '',
          // Compared only on a replay of the same key: without one, dispatch-svc neither stores nor reads it.
          fingerprint: idempotencyKey === undefined ? '' : sendFingerprint(input, organizationId),
          monthlyQuota,
          test: access.test,
        },
        fieldErrors,
      );
    } catch (error) {
      // The quota was used up by requests that passed check 5 together with this one: the next ones stop at check 5.
      if (monthlyQuota > 0 && error instanceof ApiError && error.code === 'plan_blocked') usage.record(organizationId, monthlyQuota);
      throw error;
    }
    if (monthlyQuota > 0 && answer.organizationAccepted > 0) usage.record(organizationId, answer.organizationAccepted);
    accept(ctx, answer.accepted);
  };
}

function accept(ctx: ParameterizedContext<GatewayState>, body: AcceptedBody): void {
  annotateRequestSpan({ [notifyAttributes.messageId]: body.message_id });
  ctx.status = 202;
  if (body.idempotent_replay) ctx.set('Idempotent-Replayed', 'true');
  ctx.body = body;
}
