// DispatchService's template calls for the public API (gateway token; docs/contract.md, "Templates over the API"), each
// matched on project AND organization. Versions are immutable and numbered after the latest; the row holds the one
// sends use, so the send path reads templates exactly as before. A change must name the current ETag (the gateway
// refuses one without it), is judged against the locked row and is audited in its own transaction. Syntax is checked,
// and renders run, in the render pool with its limits, as the panel's preview and notifyctl's save.
import { status } from '@grpc/grpc-js';
import { type AsyncHandlers, UserError } from '@notify/platform';
import { type Pool, type PoolClient, recordAudit, withTransaction } from '@notify/platform/database';
import type { dispatch } from '@notify/proto';
import { type Renderer, TemplateRenderError, type TemplateSource } from '@notify/templating';
import type { AnySchemaObject } from 'ajv';
import { parseVariablesSchema } from './template-admin.ts';
import {
  activateVersion,
  addVersion,
  deleteTemplate,
  etagOf,
  findVersion,
  ifMatchAllows,
  insertTemplate,
  listVersions,
  lockTemplate,
  pageTemplates,
  type VersionRow,
} from './template-api-store.ts';
import {
  findOrganizationTemplate,
  type OrganizationProject,
  ownedProject,
  slugPattern,
  type TemplateContent,
  type TemplateRow,
  toTemplateMessage,
} from './template-store.ts';
import { encodeViolation, type VariablesSchemas, type Violation } from './variables-schema.ts';

export interface TemplateApiDeps {
  readonly pool: Pool;
  readonly schemas: VariablesSchemas;
  /** The render pool. */
  readonly renderer: Renderer;
}

/** The public API's page sizes, as the other listings'. */
export const apiTemplateLimits = { default: 50, max: 100 } as const;

const notFound = (slug: string): UserError => new UserError(status.NOT_FOUND, 'template_not_found', `no template "${slug}" in this project`);
const invalid = (fault: string): UserError => new UserError(status.INVALID_ARGUMENT, 'invalid_argument', `invalid request: ${fault}`, { fields: [fault] });

const toApiTemplate = (row: TemplateRow): dispatch.ApiTemplate__Output => ({
  template: toTemplateMessage(row),
  latestVersion: row.latestVersion,
  etag: etagOf(row),
  createdAt: row.createdAt.toISOString(),
});

/**
 * One problem of a template text, from the parser's or the renderer's message: LiquidJS ends it with `, line:L, col:C`,
 * and the renderer prefixes its own naming of the template and part, which the answer already says.
 */
export function templateProblem(part: string, message: string): dispatch.TemplateProblem__Output {
  const bare = message.replace(/^template ".*" version \d+: the (?:subject|html|text) could not be rendered: /s, '');
  const at = /^(.*), line:(\d+), col:(\d+)$/s.exec(bare);
  if (!at) return { part, line: 0, column: 0, message: bare };
  return { part, line: Number(at[2]), column: Number(at[3]), message: at[1] ?? bare };
}

/** Every part that does not parse, each with its line and column; empty when all three do. */
async function syntaxProblems(renderer: Renderer, texts: TemplateSource['template']): Promise<dispatch.TemplateProblem__Output[]> {
  const problems = await renderer.checkSyntax(texts);
  return Object.entries(problems).map(([part, message]) => templateProblem(part, message));
}

/** The content to store, or the refusal: texts that do not parse (with line and column), or a schema that does not compile. */
async function checkedContent(deps: TemplateApiDeps, content: dispatch.ApiTemplateContent__Output | null): Promise<TemplateContent> {
  const { subject = '', html = '', text = '', variablesSchemaJson = '' } = content ?? {};
  if (subject.trim() === '' || (html.trim() === '' && text.trim() === '')) throw invalid('content: a subject and an html or a text are required');
  const schema = parseVariablesSchema(variablesSchemaJson, deps.schemas);
  if ('problem' in schema) throw new UserError(status.INVALID_ARGUMENT, 'variables_schema_invalid', schema.problem, { fields: [schema.problem] });
  const problems = await syntaxProblems(deps.renderer, { slug: '', version: 0, subject, html, text });
  if (problems.length > 0)
    throw new UserError(status.INVALID_ARGUMENT, 'template_invalid', 'the template does not parse', {
      fields: problems.map((problem) => JSON.stringify(problem)),
    });
  return { subject, html, text, variablesSchemaJson: schema.json };
}

function checkSlug(slug: string): void {
  if (!slugPattern.test(slug)) throw notFound(slug);
}

/** A change of the live template: locked, its ETag judged, changed and audited in one transaction. */
async function changeTemplate<T>(
  deps: TemplateApiDeps,
  request: OrganizationProject & { slug: string; ifMatch: string },
  change: (client: PoolClient, row: TemplateRow) => Promise<T>,
): Promise<T> {
  checkSlug(request.slug);
  return withTransaction(deps.pool, async (client) => {
    const row = await lockTemplate(client, request, request.slug);
    if (!row) throw notFound(request.slug);
    if (request.ifMatch !== '' && !ifMatchAllows(request.ifMatch, etagOf(row)))
      throw new UserError(status.FAILED_PRECONDITION, 'precondition_failed', `template "${request.slug}" changed since that ETag`);
    return change(client, row);
  });
}

const audit = (client: PoolClient, request: OrganizationProject & { apiKeyId: number; slug: string }, action: string, detail: Record<string, unknown>) =>
  recordAudit(client, {
    organizationId: request.organizationId,
    projectId: request.projectId,
    apiKeyId: request.apiKeyId,
    action,
    target: request.slug,
    detail,
  });

/** The texts and schema a render uses: a stored version's, or the request's own. */
async function renderSource(
  deps: TemplateApiDeps,
  request: dispatch.RenderApiTemplateRequest__Output,
): Promise<{ texts: TemplateSource['template']; violations: (data: unknown) => dispatch.TemplateProblem__Output[] }> {
  const asProblems = (found: readonly Violation[]) => found.map((violation) => ({ part: 'data', line: 0, column: 0, message: encodeViolation(violation) }));
  if (request.slug === '') {
    const { subject = '', html = '', text = '', variablesSchemaJson = '' } = request.content ?? {};
    const schema = parseVariablesSchema(variablesSchemaJson, deps.schemas);
    if ('problem' in schema) throw new UserError(status.INVALID_ARGUMENT, 'variables_schema_invalid', schema.problem, { fields: [schema.problem] });
    const parsed = schema.json === null ? null : (JSON.parse(schema.json) as AnySchemaObject);
    return {
      texts: { slug: '', version: 0, subject, html, text },
      violations: (data) => (parsed ? asProblems(deps.schemas.unsavedViolations(parsed, data)) : []),
    };
  }
  checkSlug(request.slug);
  const row = await findOrganizationTemplate(deps.pool, request, request.slug);
  if (!row) throw notFound(request.slug);
  const stored = request.version === 0 || request.version === row.version ? row : await findVersion(deps.pool, row.id, request.version);
  if (!stored) throw new UserError(status.NOT_FOUND, 'template_version_not_found', `template "${request.slug}" has no version ${request.version}`);
  const source = { id: row.id, version: stored.version, variablesSchema: stored.variablesSchema };
  return {
    texts: { slug: row.slug, version: stored.version, subject: stored.subject, html: stored.html, text: stored.text },
    violations: (data) => asProblems(deps.schemas.violations(source, data)),
  };
}

/** Renders in the render pool and writes nothing: the problems (syntax of every part, then data, then the render) or the mail. */
async function renderApiTemplate(deps: TemplateApiDeps, request: dispatch.RenderApiTemplateRequest__Output): Promise<dispatch.RenderedApiTemplate__Output> {
  let data: unknown;
  try {
    data = JSON.parse(request.dataJson);
  } catch {
    throw invalid('data_json: is not valid JSON');
  }
  if (typeof data !== 'object' || data === null || Array.isArray(data)) throw invalid('data_json: must be a JSON object');
  const { texts, violations } = await renderSource(deps, request);
  const failed = (problems: dispatch.TemplateProblem__Output[]) => ({ subject: '', html: '', text: '', problems });
  const syntax = await syntaxProblems(deps.renderer, texts);
  if (syntax.length > 0) return failed(syntax);
  const faults = violations(data);
  if (faults.length > 0) return failed(faults);
  try {
    const source = { projectId: request.projectId, template: texts, data: data as Record<string, unknown>, strictVariables: true };
    return { ...(await deps.renderer.render(source)), problems: [] };
  } catch (error) {
    if (error instanceof TemplateRenderError) return failed([templateProblem(error.part ?? '', error.message)]);
    throw error;
  }
}

const toApiVersion = (found: Pick<VersionRow, 'version' | 'createdAt'> & Partial<VersionRow>, row: TemplateRow): dispatch.ApiTemplateVersion__Output => ({
  version: found.version,
  active: found.version === row.version,
  createdAt: found.createdAt.toISOString(),
  subject: found.subject ?? '',
  html: found.html ?? '',
  text: found.text ?? '',
  variablesSchemaJson: found.variablesSchema ? JSON.stringify(found.variablesSchema) : '',
});

export function apiTemplateHandlers(
  deps: TemplateApiDeps,
): Pick<
  AsyncHandlers<dispatch.DispatchServiceDefinition>,
  | 'ListApiTemplates'
  | 'CreateApiTemplate'
  | 'GetApiTemplate'
  | 'UpdateApiTemplate'
  | 'DeleteApiTemplate'
  | 'ListApiTemplateVersions'
  | 'GetApiTemplateVersion'
  | 'ActivateApiTemplateVersion'
  | 'RenderApiTemplate'
> {
  const live = async (request: OrganizationProject & { slug: string }): Promise<TemplateRow> => {
    checkSlug(request.slug);
    const row = await findOrganizationTemplate(deps.pool, request, request.slug);
    if (!row) throw notFound(request.slug);
    return row;
  };

  return {
    async ListApiTemplates(request) {
      if (request.limit < 0 || request.limit > apiTemplateLimits.max) throw invalid(`limit: must be between 1 and ${apiTemplateLimits.max}`);
      if (request.cursor !== '' && !slugPattern.test(request.cursor)) throw invalid('cursor: not a cursor this API gave');
      const limit = request.limit || apiTemplateLimits.default;
      const rows = await pageTemplates(deps.pool, request, { limit, after: request.cursor });
      const page = rows.slice(0, limit);
      return { templates: page.map(toApiTemplate), nextCursor: rows.length > limit ? (page.at(-1)?.slug ?? '') : '' };
    },

    async CreateApiTemplate(request) {
      if (!slugPattern.test(request.slug)) throw invalid('slug: must be 1-100 characters of A-Z, a-z, 0-9, _ and -');
      const content = await checkedContent(deps, request.content);
      return withTransaction(deps.pool, async (client) => {
        // The project is the caller's organization's (the row's foreign key alone would accept another's).
        const owned = await client.query({
          name: 'template-api-owned',
          text: `SELECT 1 WHERE ${ownedProject}`,
          values: [request.projectId, request.organizationId],
        });
        if (owned.rowCount !== 1) throw new UserError(status.NOT_FOUND, 'project_not_found', `no project ${request.projectId} in this organization`);
        const row = await insertTemplate(client, request.projectId, request.slug, content);
        if (!row) throw new UserError(status.ALREADY_EXISTS, 'template_exists', `template "${request.slug}" exists`);
        await audit(client, request, 'template.create', { version: 1 });
        return toApiTemplate(row);
      });
    },

    async GetApiTemplate(request) {
      return toApiTemplate(await live(request));
    },

    async UpdateApiTemplate(request) {
      checkSlug(request.slug);
      const content = await checkedContent(deps, request.content);
      return changeTemplate(deps, request, async (client, row) => {
        const updated = await addVersion(client, row, content, !request.keepActiveVersion);
        await audit(client, request, 'template.update', { version: updated.latestVersion, activated: !request.keepActiveVersion });
        return toApiTemplate(updated);
      });
    },

    async DeleteApiTemplate(request) {
      return changeTemplate(deps, request, async (client, row) => {
        await deleteTemplate(client, row);
        await audit(client, request, 'template.delete', { version: row.version, latest_version: row.latestVersion });
        return toApiTemplate(row);
      });
    },

    async ListApiTemplateVersions(request) {
      const row = await live(request);
      const versions = await listVersions(deps.pool, row.id);
      return { versions: versions.map((found) => toApiVersion(found, row)) };
    },

    async GetApiTemplateVersion(request) {
      const row = await live(request);
      const found = await findVersion(deps.pool, row.id, request.version);
      if (!found) throw new UserError(status.NOT_FOUND, 'template_version_not_found', `template "${request.slug}" has no version ${request.version}`);
      return toApiVersion(found, row);
    },

    async ActivateApiTemplateVersion(request) {
      return changeTemplate(deps, request, async (client, row) => {
        const activated = await activateVersion(client, row, request.version);
        if (!activated) throw new UserError(status.NOT_FOUND, 'template_version_not_found', `template "${request.slug}" has no version ${request.version}`);
        await audit(client, request, 'template.activate', { version: request.version, previous_version: row.version });
        return toApiTemplate(activated);
      });
    },

    RenderApiTemplate: (request) => renderApiTemplate(deps, request),
  };
}
