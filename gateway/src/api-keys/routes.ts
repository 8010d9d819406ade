// The keys:manage routes (docs/contract.md, "API keys and scopes"): GET /api/v1/api-keys/ lists the project's keys,
// POST /api/v1/api-keys/ issues one whose scopes are all among the caller's (201; the only answer that ever carries its
// secret), DELETE /api/v1/api-keys/{id}/ revokes one. Admitted like the reads (key, organization, scope, read bucket);
// auth-svc reads the caller again and judges the scopes itself, so a key changed since the gateway cached it cannot
// act. Another project's key answers exactly like one that does not exist. A key may be limited to sending From some of
// the organization's domains (`from_domains`); auth-svc judges them: each a sending domain of the organization (else
// 422 naming it), and within the caller's own when the caller is limited (else 403 from_domain_not_allowed).
import { status } from '@grpc/grpc-js';
import { RemoteError } from '@notify/platform';
import { type auth, expandScopes, maxKeyFromDomains, missingScope, type Scope, unknownScopeWords } from '@notify/proto';
import type { Middleware, ParameterizedContext } from 'koa';
import { type AdmitDeps, admit } from '../auth/admit.ts';
import type { AuthClient } from '../auth/authorize.ts';
import { maxDomainLength } from '../domains/routes.ts';
import { ApiError, FieldErrors, type FieldMessage } from '../errors/api-error.ts';
import { unexpectedRemoteFailure } from '../errors/dependency.ts';
import type { GatewayState } from '../http/state.ts';
import { text } from '../i18n/messages.ts';
import { ensureJsonBody, parseJsonObject, readBody } from '../send/body.ts';

export interface ApiKeyRouteDeps extends AdmitDeps {
  readonly auth: AuthClient;
  /** NOTIFY_MAX_BODY_BYTES. */
  readonly maxBodyBytes: number;
}

export interface ApiKeyBody {
  id: number;
  name: string;
  prefix: string;
  scopes: string[];
  test: boolean;
  send_rate: string | null;
  from_domains: string[];
  created_at: string;
  revoked_at: string | null;
  last_used_at: string | null;
}

const orNull = (value: string): string | null => (value === '' ? null : value);

function keyBody(key: auth.ApiKey__Output): ApiKeyBody {
  return {
    id: key.id,
    name: key.name,
    prefix: key.prefix,
    scopes: key.scopes,
    test: key.test,
    send_rate: orNull(key.sendRate),
    from_domains: key.fromDomains,
    created_at: key.createdAt,
    revoked_at: orNull(key.revokedAt),
    last_used_at: orNull(key.lastUsedAt),
  };
}

const insufficientScope = (scope: string): ApiError => new ApiError(403, 'insufficient_scope', text('insufficient_scope', { scope }));
const keyNotFound = (cause?: unknown): ApiError => new ApiError(404, 'api_key_not_found', text('api_key_not_found'), { cause });

/**
 * auth-svc's refusals as the contract's: its insufficient_scope message ends with the scope missing; its sending-domain
 * refusals carry the domains as their fields.
 */
function refusalOf(error: unknown): unknown {
  // PERMISSION_DENIED is not kept as the cause: such a cause reads as a refused gateway token in the error log.
  if (error instanceof RemoteError && error.status === status.PERMISSION_DENIED && error.reason === 'insufficient_scope') {
    return insufficientScope(/(\S+)$/.exec(error.message)?.[1] ?? 'keys:manage');
  }
  if (error instanceof RemoteError && error.status === status.PERMISSION_DENIED && error.reason === 'from_domain_not_allowed') {
    const [domain] = error.fields;
    const detail = domain === undefined ? text('api_keys.from_domains_unlimited') : text('api_keys.from_domain_not_allowed', { domain });
    return new ApiError(403, 'from_domain_not_allowed', detail);
  }
  if (error instanceof RemoteError && error.status === status.INVALID_ARGUMENT && error.reason === 'from_domain_unknown') {
    const messages = error.fields.map((domain) => text('api_keys.from_domain_unknown', { domain }));
    return new FieldErrors(new Map([['from_domains', messages]]), { cause: error });
  }
  if (error instanceof RemoteError && error.status === status.NOT_FOUND) return keyNotFound(error);
  return unexpectedRemoteFailure(error);
}

/** A key to issue, as the body asks: every fault of it at once, as 422. */
interface NewKey {
  readonly name: string;
  readonly scopes: readonly Scope[];
  readonly test: boolean;
  /** As given: auth-svc normalizes and judges them. */
  readonly fromDomains: readonly string[];
}

const maxNameLength = 200;
const fields = new Set(['name', 'scopes', 'test', 'from_domains']);

/**
 * The faults of `from_domains` that need no database: a list of at most 50 strings, each one that could name a domain
 * (something besides a trailing dot, at most 253 characters), as auth-svc's own check requires.
 */
function fromDomainsFaults(fromDomains: unknown): FieldMessage[] {
  if (!Array.isArray(fromDomains) || !fromDomains.every((domain) => typeof domain === 'string')) return [text('field.type_string_list')];
  if (fromDomains.length > maxKeyFromDomains) return [text('api_keys.from_domains_count', { max: maxKeyFromDomains })];
  return fromDomains.some((domain) => domain.trim().replace(/\.$/, '') === '' || domain.length > maxDomainLength) ? [text('domains.domain')] : [];
}

function newKeyOf(body: Record<string, unknown>): NewKey {
  const faults = new Map<string, FieldMessage[]>();
  for (const field of Object.keys(body)) if (!fields.has(field)) faults.set(field, [text('field.unknown')]);
  const { name, scopes = [], test = false, from_domains: fromDomains = [] } = body;
  if (name === undefined) faults.set('name', [text('field.required')]);
  else if (typeof name !== 'string') faults.set('name', [text('field.type_string')]);
  else if (name.trim() === '') faults.set('name', [text('field.blank')]);
  else if ([...name.trim()].length > maxNameLength) faults.set('name', [text('field.max_length', { max: maxNameLength })]);
  if (!Array.isArray(scopes) || !scopes.every((scope) => typeof scope === 'string')) faults.set('scopes', [text('field.type_string_list')]);
  else {
    const unknown = unknownScopeWords(scopes);
    if (unknown.length > 0)
      faults.set(
        'scopes',
        unknown.map((scope) => text('scopes.unknown', { scope })),
      );
  }
  if (typeof test !== 'boolean') faults.set('test', [text('field.type_boolean')]);
  const domainFaults = fromDomainsFaults(fromDomains);
  if (domainFaults.length > 0) faults.set('from_domains', domainFaults);
  if (faults.size > 0) throw new FieldErrors(faults);
  return { name: (name as string).trim(), scopes: expandScopes(scopes as string[]), test: test as boolean, fromDomains: fromDomains as string[] };
}

/** The path's key id; anything but an id this API could have given is a key that does not exist. */
function keyIdOf(ctx: ParameterizedContext<GatewayState>): number {
  const raw = String((ctx as unknown as { params: Record<string, string> }).params.keyId ?? '');
  const keyId = /^[1-9][0-9]{0,15}$/.test(raw) ? Number(raw) : 0;
  if (!Number.isSafeInteger(keyId) || keyId === 0) throw keyNotFound();
  return keyId;
}

export function listApiKeysRoute(deps: ApiKeyRouteDeps): Middleware<GatewayState> {
  return async (ctx) => {
    const access = await admit(deps, ctx, 'keys:manage');
    const listed = await deps.auth.call('ListProjectApiKeys', { callerKeyId: access.keyId }).catch((error: unknown) => {
      throw refusalOf(error);
    });
    ctx.body = { results: listed.keys.map(keyBody) };
  };
}

export function createApiKeyRoute(deps: ApiKeyRouteDeps): Middleware<GatewayState> {
  return async (ctx) => {
    const bytes = await readBody(ctx.req, deps.maxBodyBytes);
    const access = await admit(deps, ctx, 'keys:manage');
    ensureJsonBody(ctx.get('Content-Type') || undefined, ctx.get('Content-Encoding') || undefined);
    const wanted = newKeyOf(parseJsonObject(bytes));
    const missing = missingScope(access.scopes, wanted.scopes);
    if (missing) throw insufficientScope(missing);
    const created = await deps.auth
      .call('CreateProjectApiKey', {
        callerKeyId: access.keyId,
        name: wanted.name,
        scopes: [...wanted.scopes],
        test: wanted.test,
        fromDomains: [...wanted.fromDomains],
      })
      .catch((error: unknown) => {
        throw refusalOf(error);
      });
    ctx.status = 201;
    ctx.body = { ...keyBody(created.key as auth.ApiKey__Output), key: created.apiKey };
  };
}

export function revokeApiKeyRoute(deps: ApiKeyRouteDeps): Middleware<GatewayState> {
  return async (ctx) => {
    const access = await admit(deps, ctx, 'keys:manage');
    const id = keyIdOf(ctx);
    const revoked = await deps.auth.call('RevokeProjectApiKey', { callerKeyId: access.keyId, id }).catch((error: unknown) => {
      throw refusalOf(error);
    });
    ctx.body = keyBody(revoked);
  };
}
