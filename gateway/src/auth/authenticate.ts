// Checks 2-4 for one send request, with the brute-force limit around them. A credential in the `Api-Key` form, well
// formed or not, is a key presented: its refusal counts against the key it names, or against the client address when
// it names none (brute-force-guard.ts). No credential, or another scheme,
// is refused at once and not counted: no key was tried, so nothing was guessed (and a misconfigured client that sends
// none does not lock out the valid callers behind its address). A key answered from the authorization cache is a key
// auth-svc accepted: the guard sees the same success it would have seen from the call. Last, the key must hold the
// scope the route needs (403 insufficient_scope, not a failed authentication: the key is real and was not guessed).
import type { Scope } from '@notify/proto';
import { ApiError } from '../errors/api-error.ts';
import { text } from '../i18n/messages.ts';
import type { ParsedAuthorization } from './authorization-header.ts';
import { type Access, type AuthClient, type AuthorizeCall, authorize, callAuthorize, KeyRefused, notAuthenticated } from './authorize.ts';
import type { BruteForceGuard } from './brute-force-guard.ts';
import type { CachedAuthorizer } from './cached-authorizer.ts';
import type { ParsedOrganization } from './organization-header.ts';

export interface AuthenticateDeps {
  readonly auth: AuthClient;
  /** Accepted keys answered from memory (AUTH_CACHE_TTL); absent, every request asks auth-svc. */
  readonly authorizations?: CachedAuthorizer;
  /** Limits failed authentications per key and per client address; absent, they are not limited. */
  readonly bruteForce?: BruteForceGuard;
}

export async function authenticate(
  deps: AuthenticateDeps,
  ip: string,
  credential: ParsedAuthorization,
  organization: ParsedOrganization,
  scope: Scope,
): Promise<Access> {
  const access = await authenticateKey(deps, ip, credential, organization);
  if (!access.scopes.includes(scope)) throw new ApiError(403, 'insufficient_scope', text('insufficient_scope', { scope }));
  return access;
}

async function authenticateKey(deps: AuthenticateDeps, ip: string, credential: ParsedAuthorization, organization: ParsedOrganization): Promise<Access> {
  if (!credential.ok && credential.reason !== 'auth.invalid') throw notAuthenticated(credential.reason);
  const cache = deps.authorizations;
  const call: AuthorizeCall = cache ? (apiKey, organizationId) => cache.authorize(apiKey, organizationId) : callAuthorize(deps.auth);
  const attempt = async (): Promise<Access> => {
    // Not even token68, or longer than any key: a malformed key, refused without asking auth-svc.
    if (!credential.ok) throw new KeyRefused('malformed');
    return authorize(call, credential.apiKey, organization);
  };
  if (!deps.bruteForce) return attempt();
  return deps.bruteForce.check(ip, credential.ok ? credential.apiKey : undefined, attempt);
}
