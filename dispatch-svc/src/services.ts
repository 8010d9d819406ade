// The two gRPC services dispatch-svc serves, bound to their handlers and tokens: DispatchService for the gateway
// (internal token) and TemplateAdminService for operators (admin token). main.ts and the tests both serve them from here.
import type { GrpcServer } from '@notify/platform';
import { dispatchProto } from '@notify/proto';
import { getMessage, listMessages } from './messages/queries.ts';
import { send, type SendDeps } from './messages/send.ts';
import type { LiquidSyntax } from './templates/liquid-syntax.ts';
import { templateAdminHandlers } from './templates/template-admin.ts';

export interface ServiceDeps extends SendDeps {
  readonly liquid: LiquidSyntax;
  readonly internalToken: string;
  readonly adminToken: string;
}

export function addDispatchServices(server: GrpcServer, deps: ServiceDeps): void {
  server.add(
    dispatchProto.DispatchService.service,
    {
      Send: (request) => send(deps, request),
      GetMessage: (request) => getMessage(deps.pool, request),
      ListMessages: (request) => listMessages(deps.pool, request),
    },
    [deps.internalToken],
  );
  server.add(dispatchProto.TemplateAdminService.service, templateAdminHandlers(deps), [deps.adminToken]);
}
