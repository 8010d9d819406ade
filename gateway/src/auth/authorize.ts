// Checks 2-4 in one Authorize call, mapped so that the contract's order holds: a bad key (401) wins over a bad
// X-Organization-ID (400), which wins over a key that may not use the organization (403).
import { status } from '@grpc/grpc-js';
import { type GrpcClient, RemoteError } from '@notify/platform';
import type { auth } from '@notify/proto';
import { ApiError } from '../errors/api-error.ts';
import { unexpectedRemoteFailure } from '../errors/dependency.ts';
import { type MessageKey, text } from '../i18n/messages.ts';
import type { ParsedOrganization } from './organization-header.ts';

export type AuthClient = GrpcClient<auth.AuthServiceDefinition>;

/** What the gateway knows about the caller once checks 2-4 passed. */
export interface Access {
  readonly keyId: number;
  readonly projectId: number;
  readonly organizationId: number;
  readonly plan: auth.PlanState__Output | null;
  /** The key's own rate in NOTIFY_PUBLIC_SEND_RATE form; empty for the gateway's default. */
  readonly sendRate: string;
  /** A test key (`nk_test_`): its messages are never mailed nor counted against the quota. */
  readonly test: boolean;
  /** What the key may do (proto/src/scopes.ts). */
  readonly scopes: readonly string[];
  /** The domains the key may send From, lower case; empty: no limit. */
  readonly fromDomains: readonly string[];
}

/**
 * Why a presented key was refused, for the brute-force guard and the metrics (the caller always sees the same 401):
 * `malformed` (not in the issued form, never asked about), and auth-svc's verdicts.
 */
export type KeyRefusal = 'malformed' | 'unknown_key' | 'wrong_secret' | 'revoked';

/** auth-svc's error codes for a refused key (proto/auth/v1/auth.proto). */
const keyRefusals = new Map<string, KeyRefusal>([
  ['api_key_unknown', 'unknown_key'],
  ['api_key_wrong_secret', 'wrong_secret'],
  ['api_key_revoked', 'revoked'],
]);

const challenge = { 'WWW-Authenticate': 'Api-Key' };

/** 401 `{detail}` with the challenge naming the only scheme the API accepts. */
export function notAuthenticated(reason: MessageKey): ApiError {
  return new ApiError(401, undefined, text(reason), { headers: challenge });
}

/** The 401 of a presented key that was judged and refused, knowing why (the body does not say). */
export class KeyRefused extends ApiError {
  override name = 'KeyRefused';
  readonly refusal: KeyRefusal;
  constructor(refusal: KeyRefusal) {
    super(401, undefined, text('auth.invalid'), { headers: challenge });
    this.refusal = refusal;
  }
}

/** auth-svc's Authorize for a key and an organization id, straight or through the gateway's cache; rejects with its refusal. */
export type AuthorizeCall = (apiKey: string, organizationId: number) => Promise<auth.AuthorizeResponse__Output>;

/** Authorize asked of auth-svc itself, every time. */
export function callAuthorize(client: AuthClient): AuthorizeCall {
  return (apiKey, organizationId) => client.call('Authorize', { apiKey, organizationId });
}

export async function authorize(call: AuthorizeCall, apiKey: string, organization: ParsedOrganization): Promise<Access> {
  let response: auth.AuthorizeResponse__Output;
  try {
    // With an invalid header the key is still checked, against organization 0 (which never exists), so that an
    // unknown key is answered 401 before the header's 400.
    response = await call(apiKey, organization.ok ? organization.id : 0);
  } catch (error) {
    // Only auth-svc's own verdict on the key is a 401; an UNAUTHENTICATED without it refused the gateway's token (503).
    const refusal = error instanceof RemoteError && error.status === status.UNAUTHENTICATED ? keyRefusals.get(error.reason) : undefined;
    if (refusal) throw new KeyRefused(refusal);
    if (error instanceof RemoteError && error.status === status.PERMISSION_DENIED) {
      throw organization.ok
        ? new ApiError(403, 'permission_denied', text('permission_denied'))
        : new ApiError(400, 'invalid_header', text(organization.reason));
    }
    throw unexpectedRemoteFailure(error);
  }
  if (!organization.ok) throw new ApiError(400, 'invalid_header', text(organization.reason));
  return {
    keyId: response.keyId,
    projectId: response.projectId,
    organizationId: organization.id,
    plan: response.plan,
    sendRate: response.sendRate,
    test: response.test,
    scopes: response.scopes,
    fromDomains: response.fromDomains,
  };
}
