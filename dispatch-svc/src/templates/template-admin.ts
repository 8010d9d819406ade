// TemplateAdminService: the operator's surface for templates (notifyctl, admin token).
import { status } from '@grpc/grpc-js';
import { type AsyncHandlers, UserError } from '@notify/platform';
import type { Pool } from '@notify/platform/database';
import type { dispatch } from '@notify/proto';
import type { Renderer } from '@notify/templating';
import { findTemplate, listTemplates, putTemplate, setTemplateActive, slugPattern, type TemplateContent, toTemplateMessage } from './template-store.ts';
import type { VariablesSchemas } from './variables-schema.ts';

export interface TemplateAdminDeps {
  readonly pool: Pool;
  readonly schemas: VariablesSchemas;
  /** The render pool: a template's syntax is checked in its workers, like its renders. */
  readonly renderer: Renderer;
}

const invalid = (faults: string[]): UserError =>
  new UserError(status.INVALID_ARGUMENT, 'invalid_argument', `invalid template: ${faults.join('; ')}`, { fields: faults });

const notFound = (slug: string): UserError => new UserError(status.NOT_FOUND, 'template_not_found', `no template "${slug}" in this project`);

function checkProjectAndSlug(projectId: number, slug: string, faults: string[]): void {
  if (!Number.isSafeInteger(projectId) || projectId < 1) faults.push('project_id: must be a positive integer');
  if (!slugPattern.test(slug)) faults.push('slug: must be 1-100 characters of A-Z, a-z, 0-9, _ and -');
}

/** Every fault of a PutTemplate request at once, and the content to store when there is none. */
async function validatePut(request: dispatch.PutTemplateRequest__Output, deps: TemplateAdminDeps): Promise<TemplateContent> {
  const faults: string[] = [];
  checkProjectAndSlug(request.projectId, request.slug, faults);
  if (request.subject.trim() === '') faults.push('subject: is required');
  if (request.html.trim() === '' && request.text.trim() === '') faults.push('html: html or text is required');
  const problems = await deps.renderer.checkSyntax({ subject: request.subject, html: request.html, text: request.text });
  for (const [part, problem] of Object.entries(problems)) faults.push(`${part}: ${problem}`);
  const schema = parseVariablesSchema(request.variablesSchemaJson, deps.schemas);
  if ('problem' in schema) faults.push(`variables_schema: ${schema.problem}`);
  if (faults.length > 0 || 'problem' in schema) throw invalid(faults);
  return { subject: request.subject, html: request.html, text: request.text, variablesSchemaJson: schema.json };
}

/** A variables schema given as JSON text ('' for none): compact JSON to store (null for none), or why it cannot be one. */
export function parseVariablesSchema(json: string, schemas: VariablesSchemas): { json: string | null } | { problem: string } {
  if (json.trim() === '') return { json: null };
  let schema: unknown;
  try {
    schema = JSON.parse(json);
  } catch {
    return { problem: 'is not valid JSON' };
  }
  const problem = schemas.problem(schema);
  return problem ? { problem } : { json: JSON.stringify(schema) };
}

const isForeignKeyViolation = (error: unknown): boolean => (error as { code?: unknown }).code === '23503';

export function templateAdminHandlers(deps: TemplateAdminDeps): AsyncHandlers<dispatch.TemplateAdminServiceDefinition> {
  return {
    async PutTemplate(request) {
      const content = await validatePut(request, deps);
      try {
        return toTemplateMessage(
          await putTemplate(deps.pool, request.projectId, request.slug, content, { active: request.active, unsubscribe: request.unsubscribe }),
        );
      } catch (error) {
        // templates.project_id references projects: the only foreign key an insert here can break.
        if (isForeignKeyViolation(error)) throw new UserError(status.NOT_FOUND, 'project_not_found', `no project ${request.projectId}`, { cause: error });
        throw error;
      }
    },

    async SetTemplateActive(request) {
      const faults: string[] = [];
      checkProjectAndSlug(request.projectId, request.slug, faults);
      if (faults.length > 0) throw invalid(faults);
      const row = await setTemplateActive(deps.pool, request.projectId, request.slug, request.active);
      if (!row) throw notFound(request.slug);
      return toTemplateMessage(row);
    },

    async GetTemplate(request) {
      const faults: string[] = [];
      checkProjectAndSlug(request.projectId, request.slug, faults);
      if (faults.length > 0) throw invalid(faults);
      const row = await findTemplate(deps.pool, request.projectId, request.slug);
      if (!row) throw notFound(request.slug);
      return toTemplateMessage(row);
    },

    async ListTemplates(request) {
      return { templates: (await listTemplates(deps.pool, request.projectId)).map(toTemplateMessage) };
    },
  };
}
