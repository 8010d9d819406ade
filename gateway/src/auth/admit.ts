// Checks 2-4 of the contract (key, organization header, key's organization), the scope the route needs, then the key's
// read bucket (NOTIFY_PUBLIC_READ_RATE): how every route but the sends admits a request. The rate headers go on every
// counted response; a key without the scope is refused before it is counted.
import type { Scope } from '@notify/proto';
import type { ParameterizedContext } from 'koa';
import type { GatewayState } from '../http/state.ts';
import { rateLimitHeaders, throttled } from '../rate-limit/headers.ts';
import type { SendRateLimiter } from '../rate-limit/limiter.ts';
import { type AuthenticateDeps, authenticate } from './authenticate.ts';
import { parseAuthorization } from './authorization-header.ts';
import type { Access } from './authorize.ts';
import { parseOrganizationId } from './organization-header.ts';

export interface AdmitDeps extends AuthenticateDeps {
  /** NOTIFY_PUBLIC_READ_RATE, policy `read`. */
  readonly readRateLimiter: SendRateLimiter;
}

export async function admit(deps: AdmitDeps, ctx: ParameterizedContext<GatewayState>, scope: Scope): Promise<Access> {
  const credential = parseAuthorization(ctx.get('Authorization') || undefined);
  const organization = parseOrganizationId(ctx.get('X-Organization-ID') || undefined);
  const access = await authenticate(deps, ctx.ip, credential, organization, scope);
  ctx.state.keyId = access.keyId;
  // A key's own rate is a send rate: these routes always use NOTIFY_PUBLIC_READ_RATE.
  const decision = await deps.readRateLimiter.consume(access.keyId, '');
  ctx.set(rateLimitHeaders(decision));
  if (!decision.allowed) throw throttled(decision);
  return access;
}
