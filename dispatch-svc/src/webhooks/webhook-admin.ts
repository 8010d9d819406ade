// WebhookAdminService (notifyctl, admin token): a project's webhook endpoints, their secrets, attempts and replays.
import type { AsyncHandlers } from '@notify/platform';
import type { dispatch } from '@notify/proto';
import { deleteEndpoint } from './endpoint-store.ts';
import {
  checkIds,
  createEndpoint,
  endpointAttempts,
  listProjectEndpoints,
  replay,
  rotateSecret,
  setEnabled,
  type WebhookDeps,
  webhookNotFound,
} from './webhook-operations.ts';

export function webhookAdminHandlers(deps: WebhookDeps): AsyncHandlers<dispatch.WebhookAdminServiceDefinition> {
  return {
    CreateWebhook: (request) => createEndpoint(deps, request.projectId, null, request.url, request.eventTypes),
    ListWebhooks: (request) => listProjectEndpoints(deps, request.projectId, null),
    SetWebhookEnabled: (request) => setEnabled(deps, request.id, request.enabled, null),
    async DeleteWebhook(request) {
      checkIds({ id: request.id });
      const webhook = await deleteEndpoint(deps.pool, request.id, null);
      if (!webhook) throw webhookNotFound(request.id);
      return webhook;
    },
    async RotateWebhookSecret(request) {
      checkIds({ id: request.id });
      const rotated = await rotateSecret(deps, deps.pool, request.id, null);
      if (!rotated) throw webhookNotFound(request.id);
      return rotated;
    },
    ListWebhookAttempts: (request) => endpointAttempts(deps, request, null),
    ReplayWebhookEvent: (request) => replay(deps, request.eventId, request.endpointId, null),
  };
}

/** The panel's webhook calls (PanelService): the same operations, limited to the user's organization's project. */
export function panelWebhookHandlers(
  deps: WebhookDeps,
): Pick<
  AsyncHandlers<dispatch.PanelServiceDefinition>,
  'ListProjectWebhooks' | 'CreateProjectWebhook' | 'SetProjectWebhookEnabled' | 'ListProjectWebhookAttempts' | 'ReplayProjectWebhookEvent'
> {
  const scopeOf = (request: { projectId: number; organizationId: number }) => {
    checkIds({ project_id: request.projectId, organization_id: request.organizationId });
    return { projectId: request.projectId, organizationId: request.organizationId };
  };
  return {
    ListProjectWebhooks: async (request) => listProjectEndpoints(deps, request.projectId, scopeOf(request)),
    async CreateProjectWebhook(request) {
      scopeOf(request);
      return createEndpoint(deps, request.projectId, request.organizationId, request.url, request.eventTypes);
    },
    SetProjectWebhookEnabled: async (request) => setEnabled(deps, request.webhookId, request.enabled, scopeOf(request)),
    ListProjectWebhookAttempts: async (request) =>
      endpointAttempts(deps, { id: request.webhookId, messageId: request.messageId, limit: request.limit, beforeId: request.beforeId }, scopeOf(request)),
    async ReplayProjectWebhookEvent(request) {
      const scope = scopeOf(request);
      checkIds({ webhook_id: request.webhookId });
      return replay(deps, request.eventId, request.webhookId, scope);
    },
  };
}
