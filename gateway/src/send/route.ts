// POST /api/v1/send/: the contract's checks in its exact order, first failure wins (CONTRACT.md, "Order of checks").
// Each step throws; the error handler renders.
import type { Middleware, ParameterizedContext } from 'koa';
import { annotateRequestSpan, notifyAttributes } from '@notify/platform';
import { authenticate } from '../auth/authenticate.ts';
import type { AuthClient } from '../auth/authorize.ts';
import type { BruteForceGuard } from '../auth/brute-force-guard.ts';
import type { CachedAuthorizer } from '../auth/cached-authorizer.ts';
import { parseAuthorization } from '../auth/authorization-header.ts';
import { parseOrganizationId } from '../auth/organization-header.ts';
import { ensurePlanAllowsSend } from '../auth/plan.ts';
import { FieldErrors } from '../errors/api-error.ts';
import type { GatewayState } from '../http/state.ts';
import { rateLimitHeaders, throttled } from '../rate-limit/headers.ts';
import type { SendRateLimiter } from '../rate-limit/limiter.ts';
import { ensureJsonBody, parseJsonObject, readBody } from './body.ts';
import { acceptedThisMonth, dispatchSend, findReplay, type AcceptedBody, type DispatchClient } from './dispatch.ts';
import { sendFingerprint } from './fingerprint.ts';
import { parseIdempotencyKey } from './idempotency-key.ts';
import { validateSendBody } from './validation.ts';

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

export function sendRoute(deps: SendRouteDeps): Middleware<GatewayState> {
  return async (ctx) => {
    // 1. Size, before anything else: a chunked body is read here, under the limit, so 413 wins for it too.
    const bytes = await readBody(ctx.req, deps.maxBodyBytes);

    // 2-4. Key, organization header, key's organization: one Authorize call (or its cached acceptance), mapped in the
    // contract's order. Failed attempts are limited per client address.
    const credential = parseAuthorization(ctx.get('Authorization') || undefined);
    const organization = parseOrganizationId(ctx.get('X-Organization-ID') || undefined);
    const access = await authenticate(deps, ctx.ip, credential, organization);
    ctx.state.keyId = access.keyId;

    // 5. Plan: suspension, and the month's usage when the plan has a quota.
    await ensurePlanAllowsSend(access.plan, () => acceptedThisMonth(deps.dispatch, access.organizationId));

    // 6. Rate: from here on the request counts, whatever happens after.
    const decision = await deps.rateLimiter.consume(access.keyId, access.sendRate);
    ctx.set(rateLimitHeaders(decision));
    if (!decision.allowed) throw throttled(decision);

    // 7-9. Media type, JSON object, Idempotency-Key.
    ensureJsonBody(ctx.get('Content-Type') || undefined, ctx.get('Content-Encoding') || undefined);
    const input = parseJsonObject(bytes);
    const idempotencyKey = parseIdempotencyKey(ctx.headers['idempotency-key']);

    // 10. The idempotency record: a replay is answered now, before the fields are judged; a key in flight (409) or
    // used with another body (422) is refused. The fingerprint is the parsed body as sent, valid or not.
    const fingerprint = sendFingerprint(input, access.organizationId);
    if (idempotencyKey !== undefined) {
      const replay = await findReplay(deps.dispatch, { projectId: access.projectId, idempotencyKey, fingerprint });
      if (replay) {
        accept(ctx, replay);
        return;
      }
    }

    // 11. Fields.
    const validation = validateSendBody(input);
    if (!validation.valid) throw new FieldErrors(validation.fields);
    const { body } = validation;

    // 12-14 in dispatch-svc, in one transaction that also judges the key again and counts the message against the quota.
    const accepted = await dispatchSend(deps.dispatch, {
      projectId: access.projectId,
      organizationId: access.organizationId,
      apiKeyId: access.keyId,
      template: body.template,
      to: body.to,
      dataJson: JSON.stringify(body.data),
      idempotencyKey: idempotencyKey ?? '',
      fingerprint,
      monthlyQuota: access.plan?.monthlyQuota ?? 0,
    });
    accept(ctx, accepted);
  };
}

function accept(ctx: ParameterizedContext<GatewayState>, body: AcceptedBody): void {
  annotateRequestSpan({ [notifyAttributes.messageId]: body.message_id });
  ctx.status = 202;
  if (body.idempotent_replay) ctx.set('Idempotent-Replayed', 'true');
  ctx.body = body;
}
