// The project's webhook endpoints over the public API (docs/contract.md, "Webhooks over the API"), every route needing
// webhooks:write (reads too: an endpoint's URL and log are as sensitive as its settings): list, create (201, the
// signing secret shown once), read, update (url, event_types, enabled), delete, rotate the secret (the new one shown
// once; the old one keeps signing for 24 hours), send a test event (202; delivered, signed and logged like any
// event) and page the attempts log. Admitted like the reads; dispatch-svc matches every call on project and
// organization, so another project's endpoint is 404 exactly like a missing one, and records every change in the
// audit log with the calling key.
import { status } from '@grpc/grpc-js';
import type Router from '@koa/router';
import { RemoteError } from '@notify/platform';
import { type dispatch, maxWebhookUrlLength, webhookEventTypes, webhookUrlRefusal } from '@notify/proto';
import type { Middleware, ParameterizedContext } from 'koa';
import { type AdmitDeps, admit } from '../auth/admit.ts';
import type { Access } from '../auth/authorize.ts';
import { ApiError, FieldErrors, type FieldMessage } from '../errors/api-error.ts';
import { unexpectedRemoteFailure } from '../errors/dependency.ts';
import type { GatewayState } from '../http/state.ts';
import { text } from '../i18n/messages.ts';
import { pageLimit, type QueryString, queryValues } from '../messages/read-query.ts';
import { ensureJsonBody, parseJsonObject, readBody } from '../send/body.ts';
import type { DispatchClient } from '../send/dispatch.ts';

export interface WebhookRouteDeps extends AdmitDeps {
  readonly dispatch: DispatchClient;
  /** NOTIFY_MAX_BODY_BYTES. */
  readonly maxBodyBytes: number;
}

const orNull = (value: string): string | null => (value === '' ? null : value);
const statusOrNull = (code: number): number | null => (code === 0 ? null : code);

/** An endpoint as the API shows it: never a secret; its latest attempt and its latest failed one, or null. */
function webhookBody(endpoint: dispatch.ApiWebhook__Output) {
  const webhook = endpoint.webhook as dispatch.Webhook__Output;
  return {
    id: webhook.id,
    url: webhook.url,
    event_types: webhook.eventTypes,
    enabled: webhook.enabled,
    disabled_reason: orNull(webhook.disabledReason),
    failing_since: orNull(webhook.failingSince),
    previous_secret_expires_at: orNull(webhook.previousSecretExpiresAt),
    created_at: webhook.createdAt,
    updated_at: webhook.updatedAt,
    last_delivery:
      endpoint.lastAttemptAt === ''
        ? null
        : { attempted_at: endpoint.lastAttemptAt, status_code: statusOrNull(endpoint.lastStatusCode), succeeded: endpoint.lastSucceeded },
    last_error:
      endpoint.lastErrorAt === ''
        ? null
        : { attempted_at: endpoint.lastErrorAt, status_code: statusOrNull(endpoint.lastErrorStatusCode), error: orNull(endpoint.lastError) },
  };
}

function attemptBody(attempt: dispatch.WebhookAttempt__Output) {
  return {
    id: attempt.id,
    event_id: attempt.webhookId,
    event_type: attempt.eventType,
    message_id: attempt.messageId === 0 ? null : attempt.messageId,
    attempt: attempt.attempt,
    attempted_at: attempt.attemptedAt,
    status_code: statusOrNull(attempt.statusCode),
    latency_ms: attempt.latencyMs,
    response_body: orNull(attempt.responseBody),
    error: orNull(attempt.error),
  };
}

const webhookNotFound = (cause?: unknown): ApiError => new ApiError(404, 'webhook_not_found', text('webhook_not_found'), { cause });

/** dispatch-svc's refusals as the contract's. */
function refusalOf(error: unknown): unknown {
  if (!(error instanceof RemoteError)) return error;
  if (error.status === status.NOT_FOUND && error.reason === 'webhook_not_found') return webhookNotFound(error);
  if (error.status === status.FAILED_PRECONDITION && error.reason === 'webhook_limit_reached')
    return new ApiError(409, 'webhook_limit_reached', text('webhook_limit_reached'), { cause: error });
  if (error.status === status.FAILED_PRECONDITION && error.reason === 'webhook_disabled')
    return new ApiError(409, 'webhook_disabled', text('webhook_disabled'), { cause: error });
  // The gateway judged the body with the same URL rule, allowing plain http: what dispatch-svc can still refuse is
  // plain http where this deployment sends only to https.
  if (error.status === status.INVALID_ARGUMENT && error.fields.length > 0 && error.fields.every((field) => field.startsWith('url:')))
    return new FieldErrors(new Map([['url', [text('webhooks.url.https_required')]]]), { cause: error });
  return unexpectedRemoteFailure(error);
}

function call<T>(pending: Promise<T>): Promise<T> {
  return pending.catch((error: unknown) => {
    throw refusalOf(error);
  });
}

/** What a body sets of an endpoint; every fault at once, as 422. */
interface EndpointFields {
  url?: string;
  eventTypes?: string[];
  enabled?: boolean;
}

function endpointFieldsOf(body: Record<string, unknown>, allowed: readonly string[], faults: Map<string, FieldMessage[]>): EndpointFields {
  for (const field of Object.keys(body)) if (!allowed.includes(field)) faults.set(field, [text('field.unknown')]);
  const fields: EndpointFields = {};
  const { url, event_types: eventTypes, enabled } = body;
  if (url !== undefined) {
    if (typeof url !== 'string') faults.set('url', [text('field.type_string')]);
    else {
      // Plain http is judged by dispatch-svc, which knows whether this deployment allows it.
      const refusal = webhookUrlRefusal(url, true);
      if (refusal) faults.set('url', [text(`webhooks.url.${refusal}`, { max: maxWebhookUrlLength })]);
      fields.url = url;
    }
  }
  if (eventTypes !== undefined) {
    if (!Array.isArray(eventTypes) || !eventTypes.every((type) => typeof type === 'string')) faults.set('event_types', [text('field.type_string_list')]);
    else {
      const unknown = [...new Set(eventTypes.filter((type) => !(webhookEventTypes as readonly string[]).includes(type)))];
      if (unknown.length > 0)
        faults.set(
          'event_types',
          unknown.slice(0, 10).map((type) => text('webhooks.event_type', { type: type.slice(0, 100), choices: webhookEventTypes.join(', ') })),
        );
      fields.eventTypes = eventTypes;
    }
  }
  if (enabled !== undefined) {
    if (typeof enabled !== 'boolean') faults.set('enabled', [text('field.type_boolean')]);
    else fields.enabled = enabled;
  }
  return fields;
}

/** The body of a create: `url` (required) and `event_types` (none or empty: all six). */
function newEndpointOf(body: Record<string, unknown>): { url: string; eventTypes: string[] } {
  const faults = new Map<string, FieldMessage[]>();
  const fields = endpointFieldsOf(body, ['url', 'event_types'], faults);
  if (body.url === undefined) faults.set('url', [text('field.required')]);
  if (faults.size > 0) throw new FieldErrors(faults);
  return { url: fields.url as string, eventTypes: fields.eventTypes ?? [] };
}

/** The body of an update: at least one of url, event_types, enabled. */
function changeOf(body: Record<string, unknown>): EndpointFields {
  const faults = new Map<string, FieldMessage[]>();
  const fields = endpointFieldsOf(body, ['url', 'event_types', 'enabled'], faults);
  if (!['url', 'event_types', 'enabled'].some((field) => field in body)) faults.set('non_field_errors', [text('webhooks.nothing_to_update')]);
  if (faults.size > 0) throw new FieldErrors(faults);
  return fields;
}

const queryParameters = ['limit', 'cursor'] as const;

/** The attempts log's query: `limit` 1-100 and `cursor`, the `next` of the previous page (an attempt's id). */
function pageOf(query: QueryString): { limit: number; beforeId: number } {
  const faults = new Map<string, FieldMessage[]>();
  const values = queryValues(query, queryParameters, faults);
  const limit = pageLimit(values.get('limit') ?? '', faults);
  const cursor = values.get('cursor') ?? '';
  if (cursor !== '' && !/^[1-9][0-9]{0,15}$/.test(cursor)) faults.set('cursor', [text('messages.cursor')]);
  if (faults.size > 0) throw new FieldErrors(faults);
  return { limit, beforeId: cursor === '' ? 0 : Number(cursor) };
}

/** The path's endpoint id; anything but an id this API could have given is an endpoint that does not exist. */
function idOf(ctx: ParameterizedContext<GatewayState>): number {
  const raw = String((ctx as unknown as { params: Record<string, string> }).params.webhookId ?? '');
  const id = /^[1-9][0-9]{0,15}$/.test(raw) ? Number(raw) : 0;
  if (!Number.isSafeInteger(id) || id === 0) throw webhookNotFound();
  return id;
}

const callerOf = (access: Access) => ({ organizationId: access.organizationId, projectId: access.projectId, apiKeyId: access.keyId });

/** Admits the request with webhooks:write, then reads its JSON body (after the size check, as every write does). */
async function admittedBody(deps: WebhookRouteDeps, ctx: ParameterizedContext<GatewayState>): Promise<[Access, Record<string, unknown>]> {
  const bytes = await readBody(ctx.req, deps.maxBodyBytes);
  const access = await admit(deps, ctx, 'webhooks:write');
  ensureJsonBody(ctx.get('Content-Type') || undefined, ctx.get('Content-Encoding') || undefined);
  return [access, parseJsonObject(bytes)];
}

export function registerWebhookRoutes(router: Router<GatewayState>, deps: WebhookRouteDeps): void {
  const list: Middleware<GatewayState> = async (ctx) => {
    const access = await admit(deps, ctx, 'webhooks:write');
    const listed = await call(deps.dispatch.call('ListApiWebhooks', callerOf(access)));
    ctx.body = { results: listed.webhooks.map(webhookBody) };
  };
  const create: Middleware<GatewayState> = async (ctx) => {
    const [access, body] = await admittedBody(deps, ctx);
    const wanted = newEndpointOf(body);
    const created = await call(deps.dispatch.call('CreateApiWebhook', { ...callerOf(access), ...wanted }));
    ctx.status = 201;
    ctx.body = { ...webhookBody(created.webhook as dispatch.ApiWebhook__Output), secret: created.secret };
  };
  const get: Middleware<GatewayState> = async (ctx) => {
    const access = await admit(deps, ctx, 'webhooks:write');
    ctx.body = webhookBody(await call(deps.dispatch.call('GetApiWebhook', { ...callerOf(access), id: idOf(ctx) })));
  };
  const update: Middleware<GatewayState> = async (ctx) => {
    const [access, body] = await admittedBody(deps, ctx);
    const id = idOf(ctx);
    const change = changeOf(body);
    const updated = await call(
      deps.dispatch.call('UpdateApiWebhook', {
        ...callerOf(access),
        id,
        setUrl: change.url !== undefined,
        url: change.url ?? '',
        setEventTypes: change.eventTypes !== undefined,
        eventTypes: change.eventTypes ?? [],
        setEnabled: change.enabled !== undefined,
        enabled: change.enabled ?? false,
      }),
    );
    ctx.body = webhookBody(updated);
  };
  const remove: Middleware<GatewayState> = async (ctx) => {
    const access = await admit(deps, ctx, 'webhooks:write');
    ctx.body = webhookBody(await call(deps.dispatch.call('DeleteApiWebhook', { ...callerOf(access), id: idOf(ctx) })));
  };
  const rotate: Middleware<GatewayState> = async (ctx) => {
    const access = await admit(deps, ctx, 'webhooks:write');
    const rotated = await call(deps.dispatch.call('RotateApiWebhookSecret', { ...callerOf(access), id: idOf(ctx) }));
    ctx.body = { ...webhookBody(rotated.webhook as dispatch.ApiWebhook__Output), secret: rotated.secret };
  };
  const test: Middleware<GatewayState> = async (ctx) => {
    const access = await admit(deps, ctx, 'webhooks:write');
    const event = await call(deps.dispatch.call('TestApiWebhook', { ...callerOf(access), id: idOf(ctx) }));
    ctx.status = 202;
    ctx.body = { event_id: event.webhookId, type: event.type, created_at: event.createdAt };
  };
  const attempts: Middleware<GatewayState> = async (ctx) => {
    const access = await admit(deps, ctx, 'webhooks:write');
    const id = idOf(ctx);
    const page = pageOf(ctx.query);
    const listed = await call(deps.dispatch.call('ListApiWebhookAttempts', { ...callerOf(access), id, ...page }));
    ctx.body = { results: listed.attempts.map(attemptBody), next: listed.nextBeforeId === 0 ? null : String(listed.nextBeforeId) };
  };

  // Each route also answers without its trailing slash (or with one, for the two actions).
  for (const path of ['/api/v1/webhooks/', '/api/v1/webhooks']) {
    router.get('/api/v1/webhooks/', path, list);
    router.post('/api/v1/webhooks/', path, create);
  }
  for (const slash of ['/', '']) {
    const item = `/api/v1/webhooks/:webhookId${slash}`;
    router.get('/api/v1/webhooks/{id}/', item, get);
    router.patch('/api/v1/webhooks/{id}/', item, update);
    router.delete('/api/v1/webhooks/{id}/', item, remove);
    router.post('/api/v1/webhooks/{id}/rotate-secret', `/api/v1/webhooks/:webhookId/rotate-secret${slash}`, rotate);
    router.post('/api/v1/webhooks/{id}/test', `/api/v1/webhooks/:webhookId/test${slash}`, test);
    router.get('/api/v1/webhooks/{id}/attempts/', `/api/v1/webhooks/:webhookId/attempts${slash}`, attempts);
  }
}
