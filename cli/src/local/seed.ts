// The demo tenant `npm start` sets up through the admin gRPC APIs, exactly as an operator would with notifyctl:
// plan "demo", organization "Demo", project "demo", active template `welcome`, an API key kept in a local file, and a
// panel user (operator) whose password is kept beside it.
// Running it again creates nothing new: each piece is looked up first, and the kept key is reused while it is valid.
import { randomBytes } from 'node:crypto';
import { mkdir, readFile, rename, writeFile } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { GrpcClient } from '@notify/platform';
import { type auth, authProto, type dispatch, dispatchProto } from '@notify/proto';
import type { Reporter } from './infrastructure.ts';

export interface SeedOptions {
  /** auth-svc gRPC address, e.g. 127.0.0.1:50051. */
  authAddress: string;
  dispatchAddress: string;
  adminToken: string;
  /** Where the demo key's full value is kept between runs (`.data/demo-api-key`). */
  keyFile: string;
  logger: Reporter;
}

export interface DemoTenant {
  readonly planId: number;
  readonly organizationId: number;
  readonly projectId: number;
  readonly template: string;
  readonly apiKeyId: number;
  /** `prefix.secret`, for the Authorization header. */
  readonly apiKey: string;
  /** Who signs in to the web panel (`/panel/`), and where the password is kept. */
  readonly panelUser: { readonly email: string; readonly password: string; readonly passwordFile: string };
  /** What this run had to create (empty when everything was already there). */
  readonly created: readonly string[];
}

export const demo = {
  plan: 'demo',
  organization: 'Demo',
  project: 'demo',
  keyName: 'demo',
  panelUser: { email: 'demo@notify.localhost', role: 'operator' },
  template: {
    slug: 'welcome',
    subject: 'Welcome, {{ name }}!',
    html: '<p>Hello {{ name }},</p>\n<p>Welcome to Notify: this mail was rendered from the <code>welcome</code> template.</p>\n',
    text: 'Hello {{ name }},\n\nWelcome to Notify: this mail was rendered from the welcome template.\n',
    schema: { type: 'object', required: ['name'], properties: { name: { type: 'string', minLength: 1 } } },
  },
} as const;

async function readKept(file: string): Promise<string | undefined> {
  const text = await readFile(file, 'utf8').catch((error: NodeJS.ErrnoException) => {
    if (error.code === 'ENOENT') return undefined;
    throw error;
  });
  const key = text?.trim();
  return key ? key : undefined;
}

async function keep(file: string, secret: string): Promise<void> {
  await mkdir(dirname(file), { recursive: true });
  const temporary = `${file}.${process.pid}.tmp`;
  await writeFile(temporary, `${secret}\n`, { mode: 0o600 });
  await rename(temporary, file);
}

type AuthAdmin = GrpcClient<auth.AuthAdminServiceDefinition>;
type TemplateAdmin = GrpcClient<dispatch.TemplateAdminServiceDefinition>;

export async function seedDemo(options: SeedOptions): Promise<DemoTenant> {
  const created: string[] = [];
  const authAdmin: AuthAdmin = new GrpcClient(authProto.AuthAdminService.service as auth.AuthAdminServiceDefinition, options.authAddress, {
    token: options.adminToken,
    deadlineMs: 10_000,
  });
  const templateAdmin: TemplateAdmin = new GrpcClient(
    dispatchProto.TemplateAdminService.service as dispatch.TemplateAdminServiceDefinition,
    options.dispatchAddress,
    {
      token: options.adminToken,
      deadlineMs: 10_000,
    },
  );
  try {
    const { plan, organization, project } = await ensureTenant(authAdmin, created);
    await ensureTemplate(templateAdmin, project.id, created, options.logger);
    const { apiKey, apiKeyId } = await ensureApiKey(authAdmin, project.id, options, created);
    const panelUser = await ensurePanelUser(authAdmin, organization.id, options);
    options.logger.info(created.length > 0 ? `demo tenant: created ${created.join(', ')}` : 'demo tenant: already set up');
    options.logger.info(`web panel: sign in at /panel/ on the gateway as ${panelUser.email} with password ${panelUser.password}`);
    return { planId: plan.id, organizationId: organization.id, projectId: project.id, template: demo.template.slug, apiKeyId, apiKey, panelUser, created };
  } finally {
    authAdmin.close();
    templateAdmin.close();
  }
}

/** The plan, organization and project, each looked up by name first and created when missing (added to `created`). */
async function ensureTenant(authAdmin: AuthAdmin, created: string[]) {
  const ensure = async <T>(what: string, existing: T | undefined, create: () => Promise<T>): Promise<T> => {
    if (existing !== undefined) return existing;
    created.push(what);
    return create();
  };
  const plan = await ensure(
    `plan "${demo.plan}"`,
    (await authAdmin.call('ListPlans', {})).plans.find((candidate) => candidate.name === demo.plan),
    () => authAdmin.call('CreatePlan', { name: demo.plan, monthlyQuota: 0, suspended: false }),
  );
  const organization = await ensure(
    `organization "${demo.organization}"`,
    (await authAdmin.call('ListOrganizations', {})).organizations.find((candidate) => candidate.name === demo.organization),
    () => authAdmin.call('CreateOrganization', { name: demo.organization, planId: plan.id }),
  );
  const project = await ensure(
    `project "${demo.project}"`,
    (await authAdmin.call('ListProjects', { organizationId: organization.id })).projects.find((candidate) => candidate.name === demo.project),
    () => authAdmin.call('CreateProject', { organizationId: organization.id, name: demo.project }),
  );
  return { plan, organization, project };
}

/** The `welcome` template; an existing one is left as the operator made it (edited, or deactivated on purpose). */
async function ensureTemplate(templateAdmin: TemplateAdmin, projectId: number, created: string[], logger: Reporter): Promise<void> {
  const template = (await templateAdmin.call('ListTemplates', { projectId })).templates.find((candidate) => candidate.slug === demo.template.slug);
  if (!template) {
    await templateAdmin.call('PutTemplate', {
      projectId,
      slug: demo.template.slug,
      subject: demo.template.subject,
      html: demo.template.html,
      text: demo.template.text,
      variablesSchemaJson: JSON.stringify(demo.template.schema),
      active: true,
    });
    created.push(`template "${demo.template.slug}"`);
  } else if (!template.active) {
    logger.warn(`template "${demo.template.slug}" is inactive: sends naming it are refused until \`notifyctl template activate\``);
  }
}

/** The key kept in the key file while it is valid for the project; otherwise a new one, kept there. */
async function ensureApiKey(authAdmin: AuthAdmin, projectId: number, options: SeedOptions, created: string[]): Promise<{ apiKey: string; apiKeyId: number }> {
  const keys = (await authAdmin.call('ListApiKeys', { projectId })).keys;
  const kept = await readKept(options.keyFile);
  const valid = kept === undefined ? undefined : keys.find((key) => !key.revokedAt && kept.startsWith(`${key.prefix}.`));
  if (kept !== undefined && valid) return { apiKey: kept, apiKeyId: valid.id };
  if (kept !== undefined) options.logger.info(`the key in ${options.keyFile} is revoked or unknown to this database: creating a new one`);
  // Every scope (`full`): on a local stack the newcomer tries the management routes with the same key as the sends.
  const fresh = await authAdmin.call('CreateApiKey', { projectId, name: demo.keyName, scopes: ['full'] });
  if (!fresh.key) throw new Error('CreateApiKey answered without the key record');
  await keep(options.keyFile, fresh.apiKey);
  created.push(`API key ${fresh.key.prefix} (kept in ${options.keyFile})`);
  return { apiKey: fresh.apiKey, apiKeyId: fresh.key.id };
}

/** The panel user; its password lives beside the key, and without it (a fresh .data/ on an old database) a new one is set. */
async function ensurePanelUser(authAdmin: AuthAdmin, organizationId: number, options: SeedOptions): Promise<DemoTenant['panelUser']> {
  const passwordFile = join(dirname(options.keyFile), 'demo-panel-password');
  const { email, role } = demo.panelUser;
  const panelUser = (await authAdmin.call('ListPanelUsers', { organizationId })).users.find((user) => user.email === email);
  let password = await readKept(passwordFile);
  if (!panelUser || password === undefined) {
    password ??= randomBytes(15).toString('base64url');
    if (panelUser) await authAdmin.call('SetPanelUserPassword', { id: panelUser.id, password });
    else await authAdmin.call('CreatePanelUser', { organizationId, email, password, role });
    await keep(passwordFile, password);
    // Reported on its own line rather than in `created`, which lists what integrators use (plan to API key).
    options.logger.info(`demo panel user: ${panelUser ? 'new password for' : 'created'} ${email} (password kept in ${passwordFile})`);
  }
  if (panelUser?.disabledAt) options.logger.warn(`panel user ${email} is disabled: it cannot sign in`);
  return { email, password, passwordFile };
}
