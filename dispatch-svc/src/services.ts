// The gRPC services dispatch-svc serves, bound to their handlers and callers: DispatchService for the gateway (but
// ListMessages for notifyctl), TemplateAdminService, DeadLetterAdminService, SuppressionAdminService, WebhookAdminService,
// DomainAdminService, ErasureAdminService, ProjectRelayAdminService, RetentionAdminService and AuditAdminService for operators (admin
// token), SigningKeyService and RelayRouteService for the mailers, PanelService for the gateway's web panel and
// ReportService for bounce-svc (and Unsubscribe for the gateway's page). main.ts and the tests both serve them from here.
import type { status } from '@grpc/grpc-js';
import type { Caller, GrpcServer } from '@notify/platform';
import type { DataKey } from '@notify/platform/mail';
import { dispatchProto } from '@notify/proto';
import type { Renderer } from '@notify/templating';
import { auditAdminHandlers } from './audit/audit-admin.ts';
import { deadLetterAdminHandlers } from './dead-letters/dead-letter-admin.ts';
import { domainAdminHandlers, signingKeyHandlers } from './domains/domain-admin.ts';
import { apiDomainHandlers } from './domains/domain-api.ts';
import { erasureAdminHandlers } from './erasure/erasure-admin.ts';
import { messageReadHandlers } from './messages/get-many.ts';
import { listMessages, searchProjectMessages } from './messages/message-list.ts';
import { createSendHandler, type SendDeps } from './messages/send.ts';
import { createSendBatchHandler } from './messages/send-batch.ts';
import { createSendManyHandler } from './messages/send-many.ts';
import { publishAccepted } from './outbox/publish-accepted.ts';
import { panelServiceHandlers } from './panel/panel-service.ts';
import { projectRelayAdminHandlers, relayRouteHandlers } from './relays/project-relay-admin.ts';
import { reportServiceHandlers } from './reports/report-service.ts';
import type { RetentionPurge } from './retention/purge.ts';
import { retentionAdminHandlers } from './retention/retention-admin.ts';
import { cancelMessage } from './scheduled/cancel.ts';
import { apiStatsHandlers } from './stats/stats-api.ts';
import { apiSuppressionHandlers, suppressionAdminHandlers } from './suppressions/suppression-admin.ts';
import { templateAdminHandlers } from './templates/template-admin.ts';
import { apiTemplateHandlers } from './templates/template-api.ts';
import { getUsage } from './usage/get-usage.ts';
import { webhookAdminHandlers } from './webhooks/webhook-admin.ts';
import { apiWebhookHandlers } from './webhooks/webhook-api.ts';
import type { WebhookDeps } from './webhooks/webhook-operations.ts';

export interface ServiceDeps extends SendDeps, WebhookDeps {
  /** The components that call dispatch-svc, each with its own token. */
  readonly callers: DispatchCallers;
  /** Renders the panel's previews and subjects and checks a saved template's syntax (the render pool of build.ts). */
  readonly renderer: Renderer;
  /** NOTIFY_DATA_KEY: verifies unsubscribe tokens. */
  readonly dataKey: DataKey;
  /** The retention purge, which RetentionAdminService runs on request. */
  readonly retention: RetentionPurge;
}

export interface DispatchCallers {
  readonly gateway: Caller;
  readonly mailer: Caller;
  readonly bounce: Caller;
  readonly admin: Caller;
}

export function addDispatchServices(server: GrpcServer, deps: ServiceDeps): void {
  const { gateway, mailer, bounce, admin } = deps.callers;
  const publish = publishAccepted(deps);
  const send = createSendHandler(deps, publish);
  const recordItem = (path: string, code: status, seconds: number): void => server.recordItem(path, code, seconds);
  const reads = messageReadHandlers(deps.pool, deps.logger, recordItem);
  server.add(
    dispatchProto.DispatchService.service,
    {
      Send: send,
      GetMessage: reads.GetMessage,
      GetMessages: reads.GetMessages,
      ListMessages: (request) => listMessages(deps.pool, request),
      SearchProjectMessages: (request) => searchProjectMessages(deps.pool, request),
      GetUsage: (request) => getUsage(deps.pool, request),
      CancelMessage: (request) => cancelMessage(deps, request, 'api'),
      SendBatch: createSendBatchHandler(deps, publish),
      SendMany: createSendManyHandler(send, deps.logger, recordItem),
      ...apiSuppressionHandlers(deps),
      ...apiDomainHandlers(deps),
      ...apiWebhookHandlers(deps),
      ...apiTemplateHandlers(deps),
      ...apiStatsHandlers(deps),
    },
    // ListMessages is notifyctl's `messages list`; the gateway lists through SearchProjectMessages. Only the gateway sends.
    {
      Send: [gateway],
      SendMany: [gateway],
      GetMessage: [gateway],
      GetMessages: [gateway],
      ListMessages: [admin],
      SearchProjectMessages: [gateway],
      GetUsage: [gateway],
      SendBatch: [gateway],
      CancelMessage: [gateway],
      ListApiSuppressions: [gateway],
      AddApiSuppressions: [gateway],
      RemoveApiSuppression: [gateway],
      ListApiDomains: [gateway],
      AddApiDomain: [gateway],
      GetApiDomain: [gateway],
      VerifyApiDomain: [gateway],
      RotateApiDomainDkim: [gateway],
      RemoveApiDomain: [gateway],
      ListApiWebhooks: [gateway],
      CreateApiWebhook: [gateway],
      GetApiWebhook: [gateway],
      UpdateApiWebhook: [gateway],
      DeleteApiWebhook: [gateway],
      RotateApiWebhookSecret: [gateway],
      TestApiWebhook: [gateway],
      ListApiWebhookAttempts: [gateway],
      ListApiTemplates: [gateway],
      CreateApiTemplate: [gateway],
      GetApiTemplate: [gateway],
      UpdateApiTemplate: [gateway],
      DeleteApiTemplate: [gateway],
      ListApiTemplateVersions: [gateway],
      GetApiTemplateVersion: [gateway],
      ActivateApiTemplateVersion: [gateway],
      RenderApiTemplate: [gateway],
      GetApiStats: [gateway],
    },
  );
  server.add(dispatchProto.TemplateAdminService.service, templateAdminHandlers(deps), [admin]);
  server.add(dispatchProto.DeadLetterAdminService.service, deadLetterAdminHandlers(deps), [admin]);
  server.add(dispatchProto.SuppressionAdminService.service, suppressionAdminHandlers(deps), [admin]);
  server.add(dispatchProto.WebhookAdminService.service, webhookAdminHandlers(deps), [admin]);
  server.add(dispatchProto.DomainAdminService.service, domainAdminHandlers(deps), [admin]);
  server.add(dispatchProto.ErasureAdminService.service, erasureAdminHandlers(deps), [admin]);
  server.add(dispatchProto.RetentionAdminService.service, retentionAdminHandlers(deps), [admin]);
  server.add(dispatchProto.AuditAdminService.service, auditAdminHandlers(deps), [admin]);
  server.add(dispatchProto.SigningKeyService.service, signingKeyHandlers(deps), [mailer]);
  server.add(dispatchProto.ProjectRelayAdminService.service, projectRelayAdminHandlers(deps), [admin]);
  server.add(dispatchProto.RelayRouteService.service, relayRouteHandlers(deps), [mailer]);
  server.add(dispatchProto.PanelService.service, panelServiceHandlers(deps), [gateway]);
  // The gateway's unsubscribe page and bounce-svc's mailto unsubscribes both land here; only bounce-svc applies reports.
  server.add(dispatchProto.ReportService.service, reportServiceHandlers(deps), { ApplyReport: [bounce], Unsubscribe: [gateway, bounce] });
}
