// The whole system as real processes on run-unique resources (resources.ts): every service under startStack, an SMTP
// server the mailers deliver to, and the clients a caller needs to arrange tenants and observe outcomes. Free of
// node:test, so the load bench starts the very same system the end-to-end suites do (system.ts adds their defaults).
import { execFile } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { fileURLToPath } from 'node:url';
import { type SmtpSink, type Stack, type StackOptions, startStack } from '@notify/cli/local';
import { channelCredentials, GrpcClient } from '@notify/platform';
import { authProto, dispatchProto } from '@notify/proto';
import pg from 'pg';
import { createRunResources, infrastructure, type RunResources } from './resources.ts';

const repoRoot = fileURLToPath(new URL('../..', import.meta.url));

/** The SMTP server the mailers deliver to: the local sink in this process, or one in a process of its own. */
export interface SystemSink {
  readonly port: number;
  close(): Promise<void>;
}

export interface LaunchOptions<S extends SystemSink> {
  /** Starts the SMTP server, storing mails in the run's mail folder. */
  startSink(mailDir: string): Promise<S>;
  mailerReplicas: number;
  /** LOG_LEVEL of every service. */
  logLevel: string;
  /** Where service output goes besides the stack's logs: process.stdout (undefined) or nowhere (null). */
  output: StackOptions['output'];
  /** Extra variables for every service. */
  env?: Record<string, string>;
  serviceEnv?: StackOptions['serviceEnv'];
  /** TLS between the services (StackOptions.grpcTls); the harness's clients and notifyctl verify with its CA. */
  grpcTls?: StackOptions['grpcTls'];
  /** Deadline of the admin clients' calls (default 5 s). */
  adminDeadlineMs?: number;
}

export interface Tenant {
  organizationId: number;
  planId: number;
  projectId: number;
  keyId: number;
  apiKey: string;
}

export interface HttpResult {
  status: number;
  headers: Headers;
  body: Record<string, unknown>;
  text: string;
}

export interface System<S extends SystemSink = SmtpSink> {
  readonly stack: Stack;
  readonly sink: S;
  readonly resources: RunResources;
  readonly db: pg.Pool;
  readonly gatewayUrl: string;
  readonly authAdmin: GrpcClient<typeof authProto.AuthAdminService.service>;
  readonly templates: GrpcClient<typeof dispatchProto.TemplateAdminService.service>;
  createTenant(name?: string): Promise<Tenant>;
  putTemplate(
    projectId: number,
    slug: string,
    template?: Partial<{ subject: string; html: string; text: string; schema: object; active: boolean; unsubscribe: boolean }>,
  ): Promise<void>;
  send(tenant: Pick<Tenant, 'apiKey' | 'organizationId'>, body: unknown, headers?: Record<string, string>): Promise<HttpResult>;
  request(path: string, init: RequestInit): Promise<HttpResult>;
  /** Runs notifyctl as its own process against this system. */
  notifyctl(...args: string[]): Promise<{ code: number; stdout: string; stderr: string }>;
  /** notifyctl that must succeed: its standard output, or a failed assertion with its standard error. */
  notifyctlOk(...args: string[]): Promise<string>;
  stop(): Promise<void>;
}

export async function launchSystem<S extends SystemSink>(options: LaunchOptions<S>): Promise<System<S>> {
  const resources = await createRunResources();
  let sink: S | undefined;
  const token = (): string => randomBytes(24).toString('hex');
  const adminToken = token();
  // NOTIFY_DATA_KEY, also on stack.env: a test mints return paths and unsubscribe tokens with it, as the mailers do.
  const dataKey = randomBytes(32).toString('base64');
  let stack: Stack;
  try {
    sink = await options.startSink(resources.mailDir);
    stack = await startStack({
      databaseUrl: resources.databaseUrl,
      gatewayToken: token(),
      mailerToken: token(),
      bounceToken: token(),
      adminToken,
      dataKey,
      natsUrl: infrastructure.natsUrl,
      natsPrefix: resources.natsPrefix,
      redisUrl: infrastructure.redisUrl,
      redisPrefix: resources.redisPrefix,
      smtpUrl: `smtp://127.0.0.1:${sink.port}`,
      mailerReplicas: options.mailerReplicas,
      logLevel: options.logLevel,
      output: options.output,
      ...(options.env ? { env: options.env } : {}),
      ...(options.serviceEnv ? { serviceEnv: options.serviceEnv } : {}),
      ...(options.grpcTls ? { grpcTls: options.grpcTls } : {}),
    });
  } catch (error) {
    await sink?.close();
    await resources.cleanup();
    throw error;
  }
  const startedSink = sink;
  const db = new pg.Pool({ connectionString: resources.databaseUrl, max: 4 });
  // An idle client whose server went away (a test restarting PostgreSQL) is dropped by the pool and replaced on the
  // next query; without a listener its 'error' event would end the test process.
  db.on('error', () => undefined);
  const deadlineMs = options.adminDeadlineMs ?? 5_000;
  const adminOptions = { token: adminToken, deadlineMs, credentials: channelCredentials({ grpcTlsCaFile: stack.env.GRPC_TLS_CA_FILE }) };
  const authAdmin = new GrpcClient(authProto.AuthAdminService.service, stack.env.AUTH_SVC_ADDR, adminOptions);
  const templates = new GrpcClient(dispatchProto.TemplateAdminService.service, stack.env.DISPATCH_SVC_ADDR, adminOptions);
  const gatewayUrl = stack.env.GATEWAY_URL;

  async function request(path: string, init: RequestInit): Promise<HttpResult> {
    const response = await fetch(`${gatewayUrl}${path}`, init);
    const text = await response.text();
    let body: Record<string, unknown> = {};
    try {
      body = JSON.parse(text) as Record<string, unknown>;
    } catch {
      // non-JSON bodies are asserted on through `text`
    }
    return { status: response.status, headers: response.headers, body, text };
  }

  const runNotifyctl = (...args: string[]): Promise<{ code: number; stdout: string; stderr: string }> =>
    new Promise((resolve) => {
      execFile(
        process.execPath,
        ['cli/src/main.ts', ...args],
        {
          cwd: repoRoot,
          env: {
            PATH: process.env.PATH ?? '',
            AUTH_SVC_ADDR: stack.env.AUTH_SVC_ADDR,
            DISPATCH_SVC_ADDR: stack.env.DISPATCH_SVC_ADDR,
            ADMIN_TOKEN: adminToken,
            GRPC_TLS_CA_FILE: stack.env.GRPC_TLS_CA_FILE,
          },
        },
        (error, stdout, stderr) => resolve({ code: error ? ((error as { code?: number }).code ?? 1) : 0, stdout, stderr }),
      );
    });
  return {
    stack,
    sink: startedSink,
    resources,
    db,
    gatewayUrl,
    authAdmin,
    templates,
    request,
    async createTenant(name = `tenant-${randomBytes(3).toString('hex')}`) {
      const plan = await authAdmin.call('CreatePlan', { name: `${name}-plan`, monthlyQuota: 0, suspended: false });
      const organization = await authAdmin.call('CreateOrganization', { name, planId: plan.id });
      const project = await authAdmin.call('CreateProject', { organizationId: organization.id, name: `${name}-project` });
      const key = await authAdmin.call('CreateApiKey', { projectId: project.id, name: 'e2e' });
      return { organizationId: organization.id, planId: plan.id, projectId: project.id, keyId: key.key?.id ?? 0, apiKey: key.apiKey };
    },
    async putTemplate(projectId, slug, template = {}) {
      await templates.call('PutTemplate', {
        projectId,
        slug,
        subject: template.subject ?? 'Hello {{ name }}',
        html: template.html ?? '<p>Hello {{ name }}</p>',
        text: template.text ?? 'Hello {{ name }}',
        variablesSchemaJson: template.schema ? JSON.stringify(template.schema) : '',
        active: template.active ?? true,
        ...(template.unsubscribe === undefined ? {} : { unsubscribe: template.unsubscribe }),
      });
    },
    send(tenant, body, headers = {}) {
      return request('/api/v1/send/', {
        method: 'POST',
        headers: {
          authorization: `Api-Key ${tenant.apiKey}`,
          'x-organization-id': String(tenant.organizationId),
          'content-type': 'application/json',
          ...headers,
        },
        body: typeof body === 'string' ? body : JSON.stringify(body),
      });
    },
    notifyctl: runNotifyctl,
    async notifyctlOk(...args) {
      const result = await runNotifyctl(...args);
      if (result.code !== 0) throw new Error(`notifyctl ${args.join(' ')} exited ${result.code}: ${result.stderr}`);
      return result.stdout;
    },
    async stop() {
      authAdmin.close();
      templates.close();
      await db.end();
      await stack.stop();
      await startedSink.close();
      await resources.cleanup();
    },
  };
}
