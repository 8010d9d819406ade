// The project's suppression list over the public API (docs/contract.md, "Suppressions"): GET /api/v1/suppressions/
// (suppressions:read) pages it newest first, filtered by reason and address, with the messages listing's cursor
// paging; POST /api/v1/suppressions/ (suppressions:write) adds up to 1,000 addresses as `manual`; DELETE
// /api/v1/suppressions/{address}/ (suppressions:write) removes one, and an entry made by a hard bounce or a complaint
// only with suppressions:reactivate too, since mailing it again risks the sender's reputation. Admitted like the
// reads; dispatch-svc matches every call on project and organization.
import { status } from '@grpc/grpc-js';
import { RemoteError } from '@notify/platform';
import { type dispatch, erasedEntryPattern, maxSuppressionsAdded, suppressionReasons } from '@notify/proto';
import type { Middleware, ParameterizedContext } from 'koa';
import { type AdmitDeps, admit } from '../auth/admit.ts';
import { ApiError, FieldErrors, type FieldMessage } from '../errors/api-error.ts';
import { unexpectedRemoteFailure } from '../errors/dependency.ts';
import type { GatewayState } from '../http/state.ts';
import { text } from '../i18n/messages.ts';
import { pageLimit, type QueryString, queryValues } from '../messages/read-query.ts';
import { ensureJsonBody, parseJsonObject, readBody } from '../send/body.ts';
import type { DispatchClient } from '../send/dispatch.ts';
import { isEmailAddress, maxRecipientLength } from '../send/validation.ts';

export interface SuppressionRouteDeps extends AdmitDeps {
  readonly dispatch: DispatchClient;
  /** NOTIFY_MAX_BODY_BYTES. */
  readonly maxBodyBytes: number;
}

export interface SuppressionBody {
  address: string;
  reason: string;
  message_id: number | null;
  created_at: string;
}

const entryBody = (entry: dispatch.Suppression__Output): SuppressionBody => ({
  address: entry.address,
  reason: entry.reason,
  message_id: entry.messageId === 0 ? null : entry.messageId,
  created_at: entry.createdAt,
});

const suppressionNotFound = (cause?: unknown): ApiError => new ApiError(404, 'suppression_not_found', text('suppression_not_found'), { cause });

const queryParameters = ['reason', 'address', 'limit', 'cursor'] as const;

/** The listing's query string: every parameter judged at once, as the messages listing's. */
function parseQuery(query: QueryString): dispatch.ApiSuppressionsRequest {
  const faults = new Map<string, FieldMessage[]>();
  const values = queryValues(query, queryParameters, faults);
  const reason = values.get('reason') ?? '';
  if (reason !== '' && !(suppressionReasons as readonly string[]).includes(reason))
    faults.set('reason', [text('suppressions.reason', { choices: suppressionReasons.join(', ') })]);
  const address = values.get('address') ?? '';
  if (address.length > maxRecipientLength) faults.set('address', [text('field.max_length', { max: maxRecipientLength })]);
  const limit = pageLimit(values.get('limit') ?? '', faults);
  const cursor = values.get('cursor') ?? '';
  if (cursor.length > 400) faults.set('cursor', [text('messages.cursor')]);
  if (faults.size > 0) throw new FieldErrors(faults);
  return { reason, address, limit, cursor };
}

/** The addresses to add: `{addresses: [...]}` with 1 to 1,000 addresses; every fault at once, by index. */
function addressesOf(body: Record<string, unknown>): string[] {
  const faults = new Map<string, FieldMessage[]>();
  for (const field of Object.keys(body)) if (field !== 'addresses') faults.set(field, [text('field.unknown')]);
  const { addresses } = body;
  if (addresses === undefined) faults.set('addresses', [text('field.required')]);
  else if (!Array.isArray(addresses) || !addresses.every((address) => typeof address === 'string')) faults.set('addresses', [text('field.type_string_list')]);
  else if (addresses.length === 0 || addresses.length > maxSuppressionsAdded)
    faults.set('addresses', [text('suppressions.count', { max: maxSuppressionsAdded })]);
  else
    addresses.forEach((address: string, index) => {
      if (address.length > maxRecipientLength || /\p{Cc}/u.test(address) || !isEmailAddress(address)) faults.set(`addresses[${index}]`, [text('to.email')]);
    });
  if (faults.size > 0) throw new FieldErrors(faults);
  return addresses as string[];
}

/** The caller's project, and its key, which dispatch-svc records in the audit log with each change. */
function scopeOf(access: { projectId: number; organizationId: number; keyId: number }) {
  return { projectId: access.projectId, organizationId: access.organizationId, apiKeyId: access.keyId };
}

export function listSuppressionsRoute(deps: SuppressionRouteDeps): Middleware<GatewayState> {
  return async (ctx) => {
    const access = await admit(deps, ctx, 'suppressions:read');
    const query = parseQuery(ctx.query);
    try {
      const page = await deps.dispatch.call('ListApiSuppressions', { ...scopeOf(access), ...query });
      ctx.body = { results: page.suppressions.map(entryBody), next: page.nextCursor === '' ? null : page.nextCursor };
    } catch (error) {
      // The gateway judged every other parameter; what dispatch-svc can still refuse is the cursor.
      if (error instanceof RemoteError && error.status === status.INVALID_ARGUMENT)
        throw new FieldErrors(new Map([['cursor', [text('messages.cursor')]]]), { cause: error });
      throw unexpectedRemoteFailure(error);
    }
  };
}

export function addSuppressionsRoute(deps: SuppressionRouteDeps): Middleware<GatewayState> {
  return async (ctx) => {
    const bytes = await readBody(ctx.req, deps.maxBodyBytes);
    const access = await admit(deps, ctx, 'suppressions:write');
    ensureJsonBody(ctx.get('Content-Type') || undefined, ctx.get('Content-Encoding') || undefined);
    const addresses = addressesOf(parseJsonObject(bytes));
    const added = await deps.dispatch.call('AddApiSuppressions', { ...scopeOf(access), addresses }).catch((error: unknown) => {
      throw unexpectedRemoteFailure(error);
    });
    ctx.body = { results: added.results.map((result) => ({ ...entryBody(result.suppression as dispatch.Suppression__Output), added: result.added })) };
  };
}

/** The path's address, decoded: an email address or an erased entry's hash; anything else is not listed. */
function addressOf(ctx: ParameterizedContext<GatewayState>): string {
  const raw = String((ctx as unknown as { params: Record<string, string> }).params.address ?? '');
  let address: string;
  try {
    address = decodeURIComponent(raw);
  } catch {
    throw suppressionNotFound();
  }
  if (!erasedEntryPattern.test(address) && (address.length > maxRecipientLength || !isEmailAddress(address))) throw suppressionNotFound();
  return address;
}

export function removeSuppressionRoute(deps: SuppressionRouteDeps): Middleware<GatewayState> {
  return async (ctx) => {
    const access = await admit(deps, ctx, 'suppressions:write');
    const address = addressOf(ctx);
    const mayReactivate = access.scopes.includes('suppressions:reactivate');
    try {
      ctx.body = entryBody(await deps.dispatch.call('RemoveApiSuppression', { ...scopeOf(access), address, mayReactivate }));
    } catch (error) {
      if (error instanceof RemoteError && error.status === status.NOT_FOUND) throw suppressionNotFound(error);
      // Not kept as the cause: a PERMISSION_DENIED cause reads as a refused gateway token in the error log.
      if (error instanceof RemoteError && error.status === status.PERMISSION_DENIED && error.reason === 'reactivate_required')
        throw new ApiError(403, 'insufficient_scope', text('insufficient_scope', { scope: 'suppressions:reactivate' }));
      throw unexpectedRemoteFailure(error);
    }
  };
}
