// The gRPC services dispatch-svc serves, bound to their handlers and tokens: DispatchService for the gateway (internal
// token), TemplateAdminService, DeadLetterAdminService, SuppressionAdminService, WebhookAdminService and
// DomainAdminService for operators (admin token), SigningKeyService for the mailers, PanelService for the gateway's
// web panel and ReportService for bounce-svc and the gateway (internal token). main.ts and the tests both serve them from here.
import type { GrpcServer } from '@notify/platform';
import { dispatchProto } from '@notify/proto';
import { deadLetterAdminHandlers } from './dead-letters/dead-letter-admin.ts';
import { domainAdminHandlers, signingKeyHandlers } from './domains/domain-admin.ts';
import { searchProjectMessages } from './messages/message-list.ts';
import { getMessage, listMessages } from './messages/queries.ts';
import { createSendHandler, type SendDeps } from './messages/send.ts';
import { suppressionAdminHandlers } from './suppressions/suppression-admin.ts';
import { panelServiceHandlers } from './panel/panel-service.ts';
import { reportServiceHandlers } from './reports/report-service.ts';
import type { DataKey } from '@notify/platform/mail';
import type { LiquidSyntax, Renderer } from '@notify/templating';
import { templateAdminHandlers } from './templates/template-admin.ts';
import { getUsage } from './usage/get-usage.ts';
import { webhookAdminHandlers } from './webhooks/webhook-admin.ts';
import type { WebhookDeps } from './webhooks/webhook-operations.ts';

export interface ServiceDeps extends SendDeps, WebhookDeps {
  readonly liquid: LiquidSyntax;
  /** Renders the panel's previews and subjects (the render pool of build.ts). */
  readonly renderer: Renderer;
  readonly internalToken: string;
  readonly adminToken: string;
  /** NOTIFY_DATA_KEY: verifies unsubscribe tokens. */
  readonly dataKey: DataKey;
}

export function addDispatchServices(server: GrpcServer, deps: ServiceDeps): void {
  const send = createSendHandler(deps);
  server.add(
    dispatchProto.DispatchService.service,
    {
      Send: send,
      GetMessage: (request) => getMessage(deps.pool, request),
      ListMessages: (request) => listMessages(deps.pool, request),
      SearchProjectMessages: (request) => searchProjectMessages(deps.pool, request),
      GetUsage: (request) => getUsage(deps.pool, request),
    },
    [deps.internalToken],
  );
  server.add(dispatchProto.TemplateAdminService.service, templateAdminHandlers(deps), [deps.adminToken]);
  server.add(dispatchProto.DeadLetterAdminService.service, deadLetterAdminHandlers(deps), [deps.adminToken]);
  server.add(dispatchProto.SuppressionAdminService.service, suppressionAdminHandlers(deps), [deps.adminToken]);
  server.add(dispatchProto.WebhookAdminService.service, webhookAdminHandlers(deps), [deps.adminToken]);
  server.add(dispatchProto.DomainAdminService.service, domainAdminHandlers(deps), [deps.adminToken]);
  server.add(dispatchProto.SigningKeyService.service, signingKeyHandlers(deps), [deps.internalToken]);
  server.add(dispatchProto.PanelService.service, panelServiceHandlers(deps), [deps.internalToken]);
  server.add(dispatchProto.ReportService.service, reportServiceHandlers(deps), [deps.internalToken]);
}
