// The gRPC clients notifyctl talks through, built from the environment only when a command needs them.
// Every call takes ADMIN_TOKEN: the admin services, and ListMessages on DispatchService, the one method of the
// gateway's service that dispatch-svc grants the admin caller instead.
import { channelCredentials, GrpcClient } from '@notify/platform';
import { type auth, authProto, type dispatch, dispatchProto } from '@notify/proto';
import { UsageError } from './args.ts';

type Environment = Readonly<Record<string, string | undefined>>;

/** Which server a command group talks to; named in the hint when it cannot be reached. */
export type Target = 'auth' | 'dispatch';

export const defaultAddresses: Readonly<Record<Target, string>> = { auth: '127.0.0.1:50051', dispatch: '127.0.0.1:50052' };
const addressVariables: Readonly<Record<Target, string>> = { auth: 'AUTH_SVC_ADDR', dispatch: 'DISPATCH_SVC_ADDR' };
const serviceNames: Readonly<Record<Target, string>> = { auth: 'auth-svc', dispatch: 'dispatch-svc' };

/** Admin operations are quick; a call that has not answered in this time will not. */
const deadlineMs = 10_000;

export class Connections {
  readonly #env: Environment;
  readonly #open: { close(): void }[] = [];

  constructor(env: Environment) {
    this.#env = env;
  }

  address(target: Target): string {
    return this.#env[addressVariables[target]] || defaultAddresses[target];
  }

  /** `auth-svc at 127.0.0.1:50051 (AUTH_SVC_ADDR)`, for error hints. */
  describe(target: Target): string {
    return `${serviceNames[target]} at ${this.address(target)} (${addressVariables[target]})`;
  }

  #token(purpose: string): string {
    const token = this.#env.ADMIN_TOKEN;
    if (!token) throw new UsageError(`ADMIN_TOKEN is not set: ${purpose}`);
    return token;
  }

  #connect<
    D extends
      | auth.AuthAdminServiceDefinition
      | dispatch.TemplateAdminServiceDefinition
      | dispatch.DispatchServiceDefinition
      | dispatch.DeadLetterAdminServiceDefinition
      | dispatch.SuppressionAdminServiceDefinition
      | dispatch.WebhookAdminServiceDefinition
      | dispatch.DomainAdminServiceDefinition
      | dispatch.ErasureAdminServiceDefinition
      | dispatch.ProjectRelayAdminServiceDefinition
      | dispatch.RetentionAdminServiceDefinition
      | dispatch.AuditAdminServiceDefinition,
  >(definition: D, target: Target, token: string): GrpcClient<D> {
    // GRPC_TLS_CA_FILE, as the services read it: set when the servers present certificates (the chart's grpcTls).
    const credentials = channelCredentials({ grpcTlsCaFile: this.#env.GRPC_TLS_CA_FILE ?? '' });
    const client = new GrpcClient(definition, this.address(target), { token, deadlineMs, credentials });
    this.#open.push(client);
    return client;
  }

  authAdmin(): GrpcClient<auth.AuthAdminServiceDefinition> {
    const token = this.#token('plans, organizations, projects and keys need the admin token of auth-svc');
    return this.#connect(authProto.AuthAdminService.service as auth.AuthAdminServiceDefinition, 'auth', token);
  }

  templateAdmin(): GrpcClient<dispatch.TemplateAdminServiceDefinition> {
    const token = this.#token('templates need the admin token of dispatch-svc');
    return this.#connect(dispatchProto.TemplateAdminService.service as dispatch.TemplateAdminServiceDefinition, 'dispatch', token);
  }

  deadLetterAdmin(): GrpcClient<dispatch.DeadLetterAdminServiceDefinition> {
    const token = this.#token('dead letters need the admin token of dispatch-svc');
    return this.#connect(dispatchProto.DeadLetterAdminService.service as dispatch.DeadLetterAdminServiceDefinition, 'dispatch', token);
  }

  suppressionAdmin(): GrpcClient<dispatch.SuppressionAdminServiceDefinition> {
    const token = this.#token('the suppression list needs the admin token of dispatch-svc');
    return this.#connect(dispatchProto.SuppressionAdminService.service as dispatch.SuppressionAdminServiceDefinition, 'dispatch', token);
  }

  webhookAdmin(): GrpcClient<dispatch.WebhookAdminServiceDefinition> {
    const token = this.#token('webhooks need the admin token of dispatch-svc');
    return this.#connect(dispatchProto.WebhookAdminService.service as dispatch.WebhookAdminServiceDefinition, 'dispatch', token);
  }

  domainAdmin(): GrpcClient<dispatch.DomainAdminServiceDefinition> {
    const token = this.#token('sending domains need the admin token of dispatch-svc');
    return this.#connect(dispatchProto.DomainAdminService.service as dispatch.DomainAdminServiceDefinition, 'dispatch', token);
  }

  erasureAdmin(): GrpcClient<dispatch.ErasureAdminServiceDefinition> {
    const token = this.#token('erasing a recipient needs the admin token of dispatch-svc');
    return this.#connect(dispatchProto.ErasureAdminService.service as dispatch.ErasureAdminServiceDefinition, 'dispatch', token);
  }

  projectRelayAdmin(): GrpcClient<dispatch.ProjectRelayAdminServiceDefinition> {
    const token = this.#token("a project's relays need the admin token of dispatch-svc");
    return this.#connect(dispatchProto.ProjectRelayAdminService.service as dispatch.ProjectRelayAdminServiceDefinition, 'dispatch', token);
  }

  retentionAdmin(): GrpcClient<dispatch.RetentionAdminServiceDefinition> {
    const token = this.#token('the retention purge needs the admin token of dispatch-svc');
    return this.#connect(dispatchProto.RetentionAdminService.service as dispatch.RetentionAdminServiceDefinition, 'dispatch', token);
  }

  auditAdmin(): GrpcClient<dispatch.AuditAdminServiceDefinition> {
    const token = this.#token('the audit log needs the admin token of dispatch-svc');
    return this.#connect(dispatchProto.AuditAdminService.service as dispatch.AuditAdminServiceDefinition, 'dispatch', token);
  }

  dispatch(): GrpcClient<dispatch.DispatchServiceDefinition> {
    const token = this.#token('listing messages needs the admin token of dispatch-svc');
    return this.#connect(dispatchProto.DispatchService.service as dispatch.DispatchServiceDefinition, 'dispatch', token);
  }

  close(): void {
    for (const client of this.#open.splice(0)) client.close();
  }
}
