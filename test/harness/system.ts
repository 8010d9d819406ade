// The whole system for an end-to-end suite: run-unique resources, an SMTP sink, every service as a real process,
// and the clients a test needs to arrange tenants and observe outcomes.
import { execFile } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { fileURLToPath } from 'node:url';
import { afterEach } from 'node:test';
import pg from 'pg';
import { authProto, dispatchProto } from '@notify/proto';
import { createLogger, GrpcClient } from '@notify/platform';
import { startSmtpSink, startStack, type SinkReply, type SinkEnvelope, type SmtpSink, type Stack, type StackOptions } from '@notify/cli/local';
import { createRunResources, infrastructure, type RunResources } from './resources.ts';

const repoRoot = fileURLToPath(new URL('../..', import.meta.url));

export interface SystemOptions {
  mailerReplicas?: number;
  /** Extra variables for every service. */
  env?: Record<string, string>;
  serviceEnv?: StackOptions['serviceEnv'];
  /** How the SMTP sink answers each recipient (default: accept). */
  smtpReply?: (envelope: SinkEnvelope) => SinkReply | undefined | Promise<SinkReply | undefined>;
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

export interface System {
  readonly stack: Stack;
  readonly sink: SmtpSink;
  readonly resources: RunResources;
  readonly db: pg.Pool;
  readonly gatewayUrl: string;
  readonly authAdmin: GrpcClient<typeof authProto.AuthAdminService.service>;
  readonly templates: GrpcClient<typeof dispatchProto.TemplateAdminService.service>;
  createTenant(name?: string): Promise<Tenant>;
  putTemplate(projectId: number, slug: string, template?: Partial<{ subject: string; html: string; text: string; schema: object; active: boolean }>): Promise<void>;
  send(tenant: Pick<Tenant, 'apiKey' | 'organizationId'>, body: unknown, headers?: Record<string, string>): Promise<HttpResult>;
  request(path: string, init: RequestInit): Promise<HttpResult>;
  /** Runs notifyctl as its own process against this system. */
  notifyctl(...args: string[]): Promise<{ code: number; stdout: string; stderr: string }>;
  stop(): Promise<void>;
}

/** Systems started by this test file and not yet stopped. */
const running = new Set<Stack>();

/** What the services said at warn level or above, their own crash output, and their exits: the last `limit` lines. */
export function serviceTrouble(stack: Stack, limit = 40): string {
  const lines = stack.logs
    .lines()
    .filter((line) => !line.text.startsWith('{') || /"level":"(?:warn|error|fatal)"/.test(line.text))
    .slice(-limit);
  return lines.map((line) => `${line.source} | ${line.text}`).join('\n');
}

// When a test fails, the services' own account of it is printed under it: in CI the output is all there is to go on.
afterEach((t) => {
  if (!('passed' in t) || t.passed) return;
  for (const stack of running) console.log(`services' warnings and errors up to the failure of "${t.name}":\n${serviceTrouble(stack) || '(none)'}`);
});

export async function startSystem(options: SystemOptions = {}): Promise<System> {
  const resources = await createRunResources();
  const quiet = createLogger('smtp-sink', 'silent');
  const sink = await startSmtpSink({ host: '127.0.0.1', port: 0, dir: resources.mailDir, logger: quiet, ...(options.smtpReply ? { reply: options.smtpReply } : {}) });
  const internalToken = randomBytes(24).toString('hex');
  const adminToken = randomBytes(24).toString('hex');
  let stack: Stack;
  try {
    stack = await startStack({
      databaseUrl: resources.databaseUrl,
      internalToken,
      adminToken,
      natsUrl: infrastructure.natsUrl,
      natsPrefix: resources.natsPrefix,
      redisUrl: infrastructure.redisUrl,
      redisPrefix: resources.redisPrefix,
      smtpUrl: `smtp://127.0.0.1:${sink.port}`,
      mailerReplicas: options.mailerReplicas ?? 1,
      logLevel: process.env['TEST_LOG_LEVEL'] ?? 'info',
      output: process.env['TEST_SERVICE_OUTPUT'] === 'stdout' ? undefined : null,
      env: { MAILER_RETRY_BASE: '200ms', MAILER_RETRY_MAX: '1s', ...options.env },
      ...(options.serviceEnv ? { serviceEnv: options.serviceEnv } : {}),
    });
  } catch (error) {
    await sink.close();
    await resources.cleanup();
    throw error;
  }
  running.add(stack);
  const db = new pg.Pool({ connectionString: resources.databaseUrl, max: 4 });
  const authAdmin = new GrpcClient(authProto.AuthAdminService.service, stack.env.AUTH_SVC_ADDR, { token: adminToken, deadlineMs: 5_000 });
  const templates = new GrpcClient(dispatchProto.TemplateAdminService.service, stack.env.DISPATCH_SVC_ADDR, { token: adminToken, deadlineMs: 5_000 });
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

  return {
    stack,
    sink,
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
    notifyctl(...args) {
      return new Promise((resolve) => {
        execFile(
          process.execPath,
          ['cli/src/main.ts', ...args],
          {
            cwd: repoRoot,
            env: { PATH: process.env['PATH'] ?? '', AUTH_SVC_ADDR: stack.env.AUTH_SVC_ADDR, DISPATCH_SVC_ADDR: stack.env.DISPATCH_SVC_ADDR, ADMIN_TOKEN: adminToken, INTERNAL_TOKEN: internalToken },
          },
          (error, stdout, stderr) => resolve({ code: error ? ((error as { code?: number }).code ?? 1) : 0, stdout, stderr }),
        );
      });
    },
    async stop() {
      authAdmin.close();
      templates.close();
      await db.end();
      await stack.stop();
      running.delete(stack);
      await sink.close();
      await resources.cleanup();
    },
  };
}
