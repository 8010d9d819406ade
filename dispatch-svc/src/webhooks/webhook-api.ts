// DispatchService's webhook calls for the public API (gateway token; docs/contract.md, "Webhooks"): the operations
// notifyctl and the panel use (webhook-operations.ts, endpoint-store.ts), each scoped to the caller's project AND
// organization, each endpoint answered with how its deliveries went lately, and every change recorded in the audit
// log in the transaction that makes it (never a secret in its detail).
import { status } from '@grpc/grpc-js';
import { type AsyncHandlers, UserError } from '@notify/platform';
import { type PoolClient, recordAudit, withTransaction } from '@notify/platform/database';
import { type dispatch, webhookTestEventType } from '@notify/proto';
import { deliverySummaries, noAttempts, webhookId } from './attempts.ts';
import { readEventTypes, urlFaults } from './endpoint-rules.ts';
import { deleteEndpoint, findEndpoint, type Queryable, type Scope, setEndpointEnabled, updateEndpoint } from './endpoint-store.ts';
import { recordTestEvent } from './test-event.ts';
import {
  checkIds,
  createEndpoint,
  endpointAttempts,
  invalid,
  listProjectEndpoints,
  rotateSecret,
  type WebhookDeps,
  webhookNotFound,
} from './webhook-operations.ts';

/** The attempts log's page sizes over the public API, as its other listings'. */
export const apiAttemptLimits = { default: 50, max: 100 } as const;

type ApiWebhookHandlers = Pick<
  AsyncHandlers<dispatch.DispatchServiceDefinition>,
  | 'ListApiWebhooks'
  | 'CreateApiWebhook'
  | 'GetApiWebhook'
  | 'UpdateApiWebhook'
  | 'DeleteApiWebhook'
  | 'RotateApiWebhookSecret'
  | 'TestApiWebhook'
  | 'ListApiWebhookAttempts'
>;

interface Caller {
  readonly organizationId: number;
  readonly projectId: number;
  readonly apiKeyId?: number;
}

function scopeOf(request: Caller): NonNullable<Scope> {
  checkIds({ project_id: request.projectId, organization_id: request.organizationId });
  return { projectId: request.projectId, organizationId: request.organizationId };
}

/** The endpoints with their summaries, read in one statement. */
async function summarized(db: Queryable, webhooks: readonly dispatch.Webhook__Output[]): Promise<dispatch.ApiWebhook__Output[]> {
  const summaries = await deliverySummaries(
    db,
    webhooks.map((webhook) => webhook.id),
  );
  return webhooks.map((webhook) => ({ webhook, ...(summaries.get(webhook.id) ?? noAttempts) }));
}

async function one(db: Queryable, webhook: dispatch.Webhook__Output): Promise<dispatch.ApiWebhook__Output> {
  return (await summarized(db, [webhook]))[0] as dispatch.ApiWebhook__Output;
}

/** The audit entry of a change to endpoint `id`, by the caller's key. */
function audit(client: PoolClient, caller: Caller, action: string, id: number, detail: Record<string, unknown>): Promise<void> {
  return recordAudit(client, {
    organizationId: caller.organizationId,
    projectId: caller.projectId,
    apiKeyId: caller.apiKeyId ?? 0,
    action,
    target: String(id),
    detail,
  });
}

/** Sets what the request gives of url, event types and enabled, in one transaction with its audit entry. */
async function updateApiWebhook(deps: WebhookDeps, request: dispatch.UpdateApiWebhookRequest__Output): Promise<dispatch.ApiWebhook__Output> {
  const scope = scopeOf(request);
  checkIds({ id: request.id });
  const types = request.setEventTypes ? readEventTypes(request.eventTypes) : undefined;
  const faults = [
    ...(request.setUrl ? urlFaults(request.url, deps.webhookAllowPrivate) : []),
    ...(types?.faults ?? []),
    ...(request.setUrl || request.setEventTypes || request.setEnabled ? [] : ['body: give at least one of url, event_types, enabled']),
  ];
  if (faults.length > 0) throw invalid(faults);
  const webhook = await withTransaction(deps.pool, async (client) => {
    let changed: dispatch.Webhook__Output | undefined;
    if (request.setUrl || types) {
      changed = await updateEndpoint(client, request.id, { url: request.setUrl ? request.url : undefined, eventTypes: types?.types }, scope);
      if (!changed) return undefined;
    }
    if (request.setEnabled) changed = await setEndpointEnabled(client, request.id, request.enabled, scope);
    if (!changed) return undefined;
    await audit(client, request, 'webhook.update', request.id, {
      ...(request.setUrl ? { url: changed.url } : {}),
      ...(types ? { event_types: changed.eventTypes } : {}),
      ...(request.setEnabled ? { enabled: changed.enabled } : {}),
    });
    return changed;
  });
  if (!webhook) throw webhookNotFound(request.id);
  return one(deps.pool, webhook);
}

export function apiWebhookHandlers(deps: WebhookDeps): ApiWebhookHandlers {
  return {
    async ListApiWebhooks(request) {
      const scope = scopeOf(request);
      const { webhooks } = await listProjectEndpoints(deps, request.projectId, scope);
      return { webhooks: await summarized(deps.pool, webhooks) };
    },

    async CreateApiWebhook(request) {
      scopeOf(request);
      const created = await createEndpoint(deps, request.projectId, request.organizationId, request.url, request.eventTypes, (client, webhook) =>
        audit(client, request, 'webhook.create', webhook.id, { url: webhook.url, event_types: webhook.eventTypes }),
      );
      return { webhook: { webhook: created.webhook, ...noAttempts }, secret: created.secret };
    },

    async GetApiWebhook(request) {
      const scope = scopeOf(request);
      checkIds({ id: request.id });
      const webhook = await findEndpoint(deps.pool, request.id, scope);
      if (!webhook) throw webhookNotFound(request.id);
      return one(deps.pool, webhook);
    },

    UpdateApiWebhook: (request) => updateApiWebhook(deps, request),

    async DeleteApiWebhook(request) {
      const scope = scopeOf(request);
      checkIds({ id: request.id });
      const deleted = await withTransaction(deps.pool, async (client) => {
        // Its summary is read first: its attempts go with it.
        const summaries = await deliverySummaries(client, [request.id]);
        const webhook = await deleteEndpoint(client, request.id, scope);
        if (!webhook) return undefined;
        await audit(client, request, 'webhook.delete', webhook.id, { url: webhook.url });
        return { webhook, ...(summaries.get(webhook.id) ?? noAttempts) };
      });
      if (!deleted) throw webhookNotFound(request.id);
      return deleted;
    },

    async RotateApiWebhookSecret(request) {
      const scope = scopeOf(request);
      checkIds({ id: request.id });
      const rotated = await withTransaction(deps.pool, async (client) => {
        const done = await rotateSecret(deps, client, request.id, scope);
        if (done) await audit(client, request, 'webhook.rotate_secret', request.id, { previous_secret_expires_at: done.webhook?.previousSecretExpiresAt });
        return done;
      });
      if (!rotated?.webhook) throw webhookNotFound(request.id);
      return { webhook: await one(deps.pool, rotated.webhook), secret: rotated.secret };
    },

    async TestApiWebhook(request) {
      const scope = scopeOf(request);
      checkIds({ id: request.id });
      const outcome = await withTransaction(deps.pool, async (client) => {
        const recorded = await recordTestEvent(client, request.id, scope);
        if (recorded.kind === 'recorded') await audit(client, request, 'webhook.test', request.id, { event_id: recorded.eventId });
        return recorded;
      });
      if (outcome.kind === 'endpoint_not_found') throw webhookNotFound(request.id);
      if (outcome.kind === 'endpoint_disabled') {
        throw new UserError(status.FAILED_PRECONDITION, 'webhook_disabled', `webhook endpoint ${request.id} is disabled: enable it to test it`);
      }
      return { eventId: outcome.eventId, webhookId: webhookId(outcome.eventId), type: webhookTestEventType, createdAt: outcome.createdAt.toISOString() };
    },

    async ListApiWebhookAttempts(request) {
      const scope = scopeOf(request);
      if (request.limit < 0 || request.limit > apiAttemptLimits.max) throw invalid([`limit: must be between 1 and ${apiAttemptLimits.max}`]);
      return endpointAttempts(deps, { id: request.id, messageId: 0, limit: request.limit || apiAttemptLimits.default, beforeId: request.beforeId }, scope);
    },
  };
}
