// The organization's sending domains over the public API (docs/contract.md, "Sending domains over the API"), every
// route with domains:write: GET/POST /api/v1/domains/ list and add one (its DKIM key generated in dispatch-svc, 201);
// GET and DELETE /api/v1/domains/{id}/ read one with the DNS records to publish and their verification state, or
// remove it; POST .../verify asks for the records to be looked up in DNS (202: dispatch-svc's verifier does it, the
// client polls GET); POST .../rotate-dkim makes a new key that signs once its record verifies. Admitted like the
// reads; dispatch-svc matches every call on the organization, to which a domain belongs.

import { status } from '@grpc/grpc-js';
import type Router from '@koa/router';
import { RemoteError } from '@notify/platform';
import type { dispatch } from '@notify/proto';
import type { Middleware, ParameterizedContext } from 'koa';
import { type AdmitDeps, admit } from '../auth/admit.ts';
import type { Access } from '../auth/authorize.ts';
import { ApiError, FieldErrors, type FieldMessage } from '../errors/api-error.ts';
import { unexpectedRemoteFailure } from '../errors/dependency.ts';
import type { GatewayState } from '../http/state.ts';
import { type Language, type MessageKey, text, translate } from '../i18n/messages.ts';
import { ensureJsonBody, parseJsonObject, readBody } from '../send/body.ts';
import type { DispatchClient } from '../send/dispatch.ts';

/** The longest domain name (RFC 1035). */
export const maxDomainLength = 253;

export interface DomainRouteDeps extends AdmitDeps {
  readonly dispatch: DispatchClient;
  /** NOTIFY_MAX_BODY_BYTES. */
  readonly maxBodyBytes: number;
}

const failureTexts: Record<string, MessageKey> = {
  record_missing: 'domains.failure.record_missing',
  key_mismatch: 'domains.failure.key_mismatch',
  lookup_failed: 'domains.failure.lookup_failed',
};

function recordBody(record: dispatch.DomainRecord__Output, language: Language) {
  const failure = failureTexts[record.failure];
  return {
    purpose: record.purpose,
    type: record.type,
    name: record.name,
    value: record.value,
    status: record.status,
    checked_at: record.checkedAt === '' ? null : record.checkedAt,
    failure: failure ? record.failure : null,
    failure_detail: failure ? translate(language, text(failure, { name: record.name })) : null,
  };
}

function domainBody(domain: dispatch.ApiDomain__Output, language: Language) {
  return {
    id: domain.id,
    domain: domain.domain,
    status: domain.status,
    verifying: domain.verifying,
    selector: domain.selector,
    records: domain.records.map((record) => recordBody(record, language)),
    created_at: domain.createdAt,
  };
}

const domainNotFound = (cause?: unknown): ApiError => new ApiError(404, 'domain_not_found', text('domain_not_found'), { cause });

/** The path's domain id; anything but an id this API could have given is a domain that does not exist. */
function domainIdOf(ctx: ParameterizedContext<GatewayState>): number {
  const raw = String((ctx as unknown as { params: Record<string, string> }).params.domainId ?? '');
  const id = /^[1-9][0-9]{0,15}$/.test(raw) ? Number(raw) : 0;
  if (!Number.isSafeInteger(id) || id === 0) throw domainNotFound();
  return id;
}

/** The domain to add: `{domain}`, a string of at most 253 characters; its syntax is dispatch-svc's to judge. */
function domainOf(body: Record<string, unknown>): string {
  const faults = new Map<string, FieldMessage[]>();
  for (const field of Object.keys(body)) if (field !== 'domain') faults.set(field, [text('field.unknown')]);
  const { domain } = body;
  if (domain === undefined) faults.set('domain', [text('field.required')]);
  else if (typeof domain !== 'string') faults.set('domain', [text('field.type_string')]);
  else if (domain.trim() === '') faults.set('domain', [text('field.blank')]);
  else if (domain.length > maxDomainLength) faults.set('domain', [text('field.max_length', { max: maxDomainLength })]);
  if (faults.size > 0) throw new FieldErrors(faults);
  return domain as string;
}

const scopeOf = (access: Access) => ({ organizationId: access.organizationId, projectId: access.projectId, apiKeyId: access.keyId });

/** A refusal of a call on one domain: another organization's id, or a missing one, is 404. */
function refusalOf(error: unknown): unknown {
  if (error instanceof RemoteError && error.status === status.NOT_FOUND) return domainNotFound(error);
  return unexpectedRemoteFailure(error);
}

function listRoute(deps: DomainRouteDeps): Middleware<GatewayState> {
  return async (ctx) => {
    const access = await admit(deps, ctx, 'domains:write');
    const listed = await deps.dispatch.call('ListApiDomains', scopeOf(access)).catch((error: unknown) => {
      throw unexpectedRemoteFailure(error);
    });
    ctx.body = { results: listed.domains.map((domain) => domainBody(domain, ctx.state.language)) };
  };
}

function addRoute(deps: DomainRouteDeps): Middleware<GatewayState> {
  return async (ctx) => {
    const bytes = await readBody(ctx.req, deps.maxBodyBytes);
    const access = await admit(deps, ctx, 'domains:write');
    ensureJsonBody(ctx.get('Content-Type') || undefined, ctx.get('Content-Encoding') || undefined);
    const domain = domainOf(parseJsonObject(bytes));
    try {
      const added = await deps.dispatch.call('AddApiDomain', { ...scopeOf(access), domain });
      ctx.status = 201;
      ctx.set('Location', `/api/v1/domains/${added.id}/`);
      ctx.body = domainBody(added, ctx.state.language);
    } catch (error) {
      if (error instanceof RemoteError && error.status === status.INVALID_ARGUMENT)
        throw new FieldErrors(new Map([['domain', [text('domains.domain')]]]), { cause: error });
      if (error instanceof RemoteError && error.status === status.ALREADY_EXISTS)
        throw new ApiError(409, 'domain_exists', text('domain_exists'), { cause: error });
      throw unexpectedRemoteFailure(error);
    }
  };
}

type DomainCall = 'GetApiDomain' | 'VerifyApiDomain' | 'RotateApiDomainDkim' | 'RemoveApiDomain';

/** A call on one domain, answered with the domain (`accepted`: 202 with where to poll). */
function oneDomainRoute(deps: DomainRouteDeps, method: DomainCall, accepted = false): Middleware<GatewayState> {
  return async (ctx) => {
    const access = await admit(deps, ctx, 'domains:write');
    const domainId = domainIdOf(ctx);
    const domain = await deps.dispatch.call(method, { ...scopeOf(access), domainId }).catch((error: unknown) => {
      throw refusalOf(error);
    });
    if (accepted) {
      ctx.status = 202;
      ctx.set('Location', `/api/v1/domains/${domain.id}/`);
    }
    ctx.body = domainBody(domain, ctx.state.language);
  };
}

/** Adds the domain routes, each with and without its trailing slash. */
export function registerDomainRoutes(router: Router<GatewayState>, deps: DomainRouteDeps): void {
  const list = listRoute(deps);
  const add = addRoute(deps);
  for (const path of ['/api/v1/domains/', '/api/v1/domains']) {
    router.get('/api/v1/domains/', path, list);
    router.post('/api/v1/domains/', path, add);
  }
  const get = oneDomainRoute(deps, 'GetApiDomain');
  const remove = oneDomainRoute(deps, 'RemoveApiDomain');
  const verify = oneDomainRoute(deps, 'VerifyApiDomain', true);
  const rotate = oneDomainRoute(deps, 'RotateApiDomainDkim');
  for (const slash of ['/', '']) {
    router.get('/api/v1/domains/{id}/', `/api/v1/domains/:domainId${slash}`, get);
    router.delete('/api/v1/domains/{id}/', `/api/v1/domains/:domainId${slash}`, remove);
    router.post('/api/v1/domains/{id}/verify', `/api/v1/domains/:domainId/verify${slash}`, verify);
    router.post('/api/v1/domains/{id}/rotate-dkim', `/api/v1/domains/:domainId/rotate-dkim${slash}`, rotate);
  }
}
