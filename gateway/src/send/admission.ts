// Checks 1-6 of a send, the same for one message (POST /api/v1/send/) and a batch (POST /api/v1/send/batch/): the body
// under its size limit, the key, the organization, the plan, and the request's own point of the per-key rate.
import type { ParameterizedContext } from 'koa';
import { authenticate } from '../auth/authenticate.ts';
import { parseAuthorization } from '../auth/authorization-header.ts';
import type { Access } from '../auth/authorize.ts';
import { parseOrganizationId } from '../auth/organization-header.ts';
import { ensurePlanAllowsSend, type MonthlyUsageMemory } from '../auth/plan.ts';
import type { GatewayState } from '../http/state.ts';
import { rateLimitHeaders, throttled } from '../rate-limit/headers.ts';
import type { RateDecision } from '../rate-limit/limiter.ts';
import { readBody } from './body.ts';
import type { SendRouteDeps } from './route.ts';

export interface Admission {
  readonly bytes: Buffer;
  readonly access: Access;
  /** The plan's monthly quota, 0 when unlimited. */
  readonly monthlyQuota: number;
  /** The rate's verdict on the request's own point (allowed: a refused one is thrown as 429). */
  readonly rate: RateDecision;
}

export async function admitSend(
  ctx: ParameterizedContext<GatewayState>,
  deps: SendRouteDeps,
  usage: MonthlyUsageMemory,
  maxBodyBytes: number,
): Promise<Admission> {
  // 1. Size, before anything else: a chunked body is read here, under the limit, so 413 wins for it too.
  const bytes = await readBody(ctx.req, maxBodyBytes);

  // 2-4. Key, organization header, key's organization: one Authorize call (or its cached acceptance), mapped in the
  // contract's order. Failed attempts are limited per client address.
  const credential = parseAuthorization(ctx.get('Authorization') || undefined);
  const organization = parseOrganizationId(ctx.get('X-Organization-ID') || undefined);
  const access = await authenticate(deps, ctx.ip, credential, organization, 'send');
  ctx.state.keyId = access.keyId;

  // 5. Plan: suspension, and the month's usage when the plan has a quota (remembered from dispatch-svc's answers).
  const monthlyQuota = access.plan?.monthlyQuota ?? 0;
  await ensurePlanAllowsSend(access.plan, () => usage.acceptedThisMonth(access.organizationId));

  // 6. Rate: from here on the request counts, whatever happens after.
  const rate = await deps.rateLimiter.consume(access.keyId, access.sendRate);
  ctx.set(rateLimitHeaders(rate));
  if (!rate.allowed) throw throttled(rate);
  return { bytes, access, monthlyQuota, rate };
}
