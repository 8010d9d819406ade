// PanelService (gateway token): what the gateway's web panel reads, the operator's re-queue button, and the
// project's webhook endpoints and suppression list, and the operator's erasure of a recipient.
import { status } from '@grpc/grpc-js';
import { type AsyncHandlers, UserError } from '@notify/platform';
import type { Pool } from '@notify/platform/database';
import type { dispatch } from '@notify/proto';
import type { Renderer } from '@notify/templating';
import { type RequeueDeps, requeueMessages } from '../dead-letters/requeue.ts';
import { panelErasureHandlers } from '../erasure/erasure-admin.ts';
import { cancelMessage } from '../scheduled/cancel.ts';
import { panelSuppressionHandlers } from '../suppressions/suppression-admin.ts';
import type { VariablesSchemas } from '../templates/variables-schema.ts';
import { panelWebhookHandlers } from '../webhooks/webhook-admin.ts';
import type { WebhookDeps } from '../webhooks/webhook-operations.ts';
import { searchMessages } from './message-search.ts';
import { getMessageView } from './message-view.ts';
import { getOverview } from './overview.ts';
import { listProjectTemplates, previewTemplate, setProjectTemplateUnsubscribe } from './template-preview.ts';

export interface PanelServiceDeps extends RequeueDeps, WebhookDeps {
  readonly pool: Pool;
  readonly schemas: VariablesSchemas;
  /** The service's render pool: parsed templates are cached in its workers, shared by every call. */
  readonly renderer: Renderer;
}

export function panelServiceHandlers(deps: PanelServiceDeps): AsyncHandlers<dispatch.PanelServiceDefinition> {
  const { renderer } = deps;
  return {
    SearchMessages: (request) => searchMessages(deps.pool, request),
    GetMessageView: (request) => getMessageView(deps.pool, renderer, request),
    GetOverview: (request) => getOverview(deps.pool, request),
    ListProjectTemplates: (request) => listProjectTemplates(deps.pool, request),
    PreviewTemplate: (request) => previewTemplate({ pool: deps.pool, renderer, schemas: deps.schemas }, request),
    SetProjectTemplateUnsubscribe: (request) => setProjectTemplateUnsubscribe(deps.pool, request),
    async RequeueMessage(request) {
      // The organization is checked here; the re-queue itself is the dead-letter path's, unchanged.
      const owned = await deps.pool.query({
        name: 'panel-requeue-owner',
        text: 'SELECT 1 FROM messages WHERE id = $1 AND project_id = $2 AND organization_id = $3',
        values: [request.messageId, request.projectId, request.organizationId],
      });
      if (owned.rowCount !== 1) throw new UserError(status.NOT_FOUND, 'message_not_found', `no message ${request.messageId} in this project`);
      const result = await requeueMessages(deps, request.projectId, [request.messageId]);
      return { requeued: result.requeued, skipped: result.skipped };
    },
    CancelProjectMessage: (request) => cancelMessage(deps, request, 'panel'),
    ...panelWebhookHandlers(deps),
    ...panelSuppressionHandlers(deps),
    ...panelErasureHandlers(deps),
  };
}
