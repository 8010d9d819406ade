// What the operator's WebhookAdminService, the panel's webhook calls and the public API's have in common: validating
// a request, then creating, listing, enabling, rotating secrets, reading attempts and replaying within a scope (see
// endpoint-store.ts), with the errors all speak.
import { status } from '@grpc/grpc-js';
import { UserError } from '@notify/platform';
import type { Pool } from '@notify/platform/database';
import type { DataKey } from '@notify/platform/mail';
import type { dispatch } from '@notify/proto';
import { listAttempts } from './attempts.ts';
import { newWebhookSecret, readEventTypes, urlFaults } from './endpoint-rules.ts';
import {
  findEndpoint,
  insertEndpoint,
  listEndpoints,
  newEndpointId,
  type Queryable,
  rotateEndpointSecret,
  type Scope,
  setEndpointEnabled,
  type Within,
} from './endpoint-store.ts';
import { replayEvent } from './replay.ts';
import { sealSecret } from './secret-sealing.ts';

export interface WebhookDeps {
  readonly pool: Pool;
  /** NOTIFY_WEBHOOK_ALLOW_PRIVATE: plain http:// URLs are accepted (local development). */
  readonly webhookAllowPrivate: boolean;
  /** Seals each new secret (secret-sealing.ts); dispatch-svc never opens one. */
  readonly dataKey: DataKey;
  /** NOTIFY_WEBHOOK_ENDPOINTS_PER_PROJECT: endpoints one project may have, enabled or not. */
  readonly webhookEndpointsPerProject: number;
}

export const isPositiveId = (value: number): boolean => Number.isSafeInteger(value) && value > 0;

export function invalid(faults: string[]): UserError {
  return new UserError(status.INVALID_ARGUMENT, 'invalid_argument', `invalid request: ${faults.join('; ')}`, { fields: faults });
}

/** INVALID_ARGUMENT with every fault when any of the named ids is not a positive integer. */
export function checkIds(ids: Readonly<Record<string, number>>): void {
  const faults = Object.entries(ids)
    .filter(([, value]) => !isPositiveId(value))
    .map(([name]) => `${name}: must be a positive integer`);
  if (faults.length > 0) throw invalid(faults);
}

export const webhookNotFound = (id: number): UserError => new UserError(status.NOT_FOUND, 'webhook_not_found', `no webhook endpoint ${id}`);

export async function createEndpoint(
  deps: WebhookDeps,
  projectId: number,
  organizationId: number | null,
  url: string,
  eventTypes: readonly string[],
  within?: Within,
): Promise<dispatch.CreatedWebhook__Output> {
  const faults: string[] = [];
  if (!isPositiveId(projectId)) faults.push('project_id: must be a positive integer');
  faults.push(...urlFaults(url, deps.webhookAllowPrivate));
  const types = readEventTypes(eventTypes);
  faults.push(...types.faults);
  if (faults.length > 0) throw invalid(faults);
  const secret = newWebhookSecret();
  const id = await newEndpointId(deps.pool);
  const inserted = await insertEndpoint(
    deps.pool,
    projectId,
    organizationId,
    { id, url, eventTypes: types.types, sealedSecret: sealSecret(deps.dataKey, id, secret) },
    deps.webhookEndpointsPerProject,
    within,
  );
  if (inserted.kind === 'project_not_found') throw new UserError(status.NOT_FOUND, 'project_not_found', `no project ${projectId}`);
  if (inserted.kind === 'limit_reached') {
    throw new UserError(
      status.FAILED_PRECONDITION,
      'webhook_limit_reached',
      `project ${projectId} has ${inserted.endpoints} webhook endpoints, the most one may have (NOTIFY_WEBHOOK_ENDPOINTS_PER_PROJECT): delete one it no longer uses`,
    );
  }
  return { webhook: inserted.webhook, secret };
}

export async function listProjectEndpoints(deps: WebhookDeps, projectId: number, scope: Scope): Promise<dispatch.ListWebhooksResponse__Output> {
  checkIds({ project_id: projectId });
  return { webhooks: await listEndpoints(deps.pool, projectId, scope) };
}

export async function setEnabled(deps: WebhookDeps, id: number, enabled: boolean, scope: Scope): Promise<dispatch.Webhook__Output> {
  checkIds({ id });
  const webhook = await setEndpointEnabled(deps.pool, id, enabled, scope);
  if (!webhook) throw webhookNotFound(id);
  return webhook;
}

/** A new secret for the endpoint, sealed under its id; the current one keeps signing beside it (endpoint-store.ts). */
export async function rotateSecret(
  deps: Pick<WebhookDeps, 'dataKey'>,
  db: Queryable,
  id: number,
  scope: Scope,
): Promise<dispatch.CreatedWebhook__Output | undefined> {
  const secret = newWebhookSecret();
  const webhook = await rotateEndpointSecret(db, id, sealSecret(deps.dataKey, id, secret), scope);
  return webhook && { webhook, secret };
}

export async function endpointAttempts(
  deps: WebhookDeps,
  request: { id: number; messageId: number; limit: number; beforeId: number },
  scope: Scope,
): Promise<dispatch.ListWebhookAttemptsResponse__Output> {
  const faults: string[] = [];
  if (!isPositiveId(request.id)) faults.push('id: must be a positive integer');
  if (!Number.isSafeInteger(request.messageId) || request.messageId < 0) faults.push('message_id: must not be negative');
  if (request.limit < 0 || request.limit > 500) faults.push('limit: must be between 1 and 500 (0 for the default)');
  if (request.beforeId < 0) faults.push('before_id: must not be negative');
  if (faults.length > 0) throw invalid(faults);
  if (!(await findEndpoint(deps.pool, request.id, scope))) throw webhookNotFound(request.id);
  return listAttempts(deps.pool, { endpointId: request.id, messageId: request.messageId, limit: request.limit || 50, beforeId: request.beforeId });
}

export async function replay(deps: WebhookDeps, eventId: number, endpointId: number, scope: Scope): Promise<dispatch.ReplayWebhookEventResponse__Output> {
  const faults: string[] = [];
  if (!isPositiveId(eventId)) faults.push('event_id: must be a positive integer');
  if (!Number.isSafeInteger(endpointId) || endpointId < 0) faults.push('endpoint_id: must not be negative');
  if (faults.length > 0) throw invalid(faults);
  if (endpointId > 0 && scope && !(await findEndpoint(deps.pool, endpointId, scope))) throw webhookNotFound(endpointId);
  const outcome = await replayEvent(deps.pool, eventId, endpointId, scope);
  if (outcome.kind === 'event_not_found') throw new UserError(status.NOT_FOUND, 'webhook_event_not_found', `no webhook event ${eventId}`);
  if (outcome.kind === 'undelivered') {
    throw new UserError(
      status.FAILED_PRECONDITION,
      'webhook_event_undelivered',
      `webhook event ${eventId} has no delivery${endpointId > 0 ? ` to endpoint ${endpointId}` : ''} to repeat`,
    );
  }
  return { eventId, endpointIds: outcome.endpointIds };
}
