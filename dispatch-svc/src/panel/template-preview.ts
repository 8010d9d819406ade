// PanelService.ListProjectTemplates and PreviewTemplate: a project's templates read-only, and the current version of
// one rendered with sample data by the renderer mailers send with (@notify/templating: sandboxed, no file access, own
// properties only, time and memory limits; the HTML part escapes the data, exactly as in a sent mail).
import { status } from '@grpc/grpc-js';
import { UserError } from '@notify/platform';
import type { Pool } from '@notify/platform/database';
import type { dispatch } from '@notify/proto';
import type { Renderer } from '@notify/templating';
import { sampleData } from '@notify/templating';
import { findOrganizationTemplate, listOrganizationTemplates, setTemplateUnsubscribe, slugPattern, toTemplateMessage } from '../templates/template-store.ts';
import type { VariablesSchemas } from '../templates/variables-schema.ts';

/** Sample data is typed into a form by a person; anything larger is a mistake or an abuse. */
export const maxPreviewDataBytes = 65_536;

export interface PreviewDeps {
  readonly pool: Pool;
  readonly renderer: Renderer;
  readonly schemas: VariablesSchemas;
}

function invalid(fault: string): UserError {
  return new UserError(status.INVALID_ARGUMENT, 'invalid_argument', `invalid preview: ${fault}`, { fields: [fault] });
}

function parseData(dataJson: string): Record<string, unknown> {
  if (Buffer.byteLength(dataJson, 'utf8') > maxPreviewDataBytes) throw invalid(`data_json: must be at most ${maxPreviewDataBytes} bytes`);
  let data: unknown;
  try {
    data = JSON.parse(dataJson);
  } catch {
    throw invalid('data_json: is not valid JSON');
  }
  if (typeof data !== 'object' || data === null || Array.isArray(data)) throw invalid('data_json: must be a JSON object');
  return data as Record<string, unknown>;
}

export async function listProjectTemplates(pool: Pool, request: dispatch.ProjectTemplatesRequest__Output): Promise<dispatch.ListTemplatesResponse__Output> {
  return { templates: (await listOrganizationTemplates(pool, request)).map(toTemplateMessage) };
}

/** The operator's switch for a template's one-click unsubscribe headers; another organization's template is not found. */
export async function setProjectTemplateUnsubscribe(
  pool: Pool,
  request: dispatch.SetProjectTemplateUnsubscribeRequest__Output,
): Promise<dispatch.Template__Output> {
  const notFound = new UserError(status.NOT_FOUND, 'template_not_found', `no template "${request.slug}" in this project`);
  if (!slugPattern.test(request.slug)) throw notFound;
  const row = await setTemplateUnsubscribe(pool, request, request.unsubscribe);
  if (!row) throw notFound;
  return toTemplateMessage(row);
}

export async function previewTemplate(deps: PreviewDeps, request: dispatch.PreviewTemplateRequest__Output): Promise<dispatch.TemplatePreview__Output> {
  if (!slugPattern.test(request.slug)) throw new UserError(status.NOT_FOUND, 'template_not_found', `no template "${request.slug}" in this project`);
  const data = request.dataJson.trim() === '' ? undefined : parseData(request.dataJson);
  const template = await findOrganizationTemplate(deps.pool, request, request.slug);
  if (!template) throw new UserError(status.NOT_FOUND, 'template_not_found', `no template "${request.slug}" in this project`);
  const used = data ?? sampleData(template.variablesSchema);
  const preview: dispatch.TemplatePreview__Output = {
    template: toTemplateMessage(template),
    dataJson: JSON.stringify(used, null, 2),
    subject: '',
    html: '',
    text: '',
    renderError: '',
    dataFaults: deps.schemas.check(template, used),
  };
  try {
    const rendered = await deps.renderer.render({ projectId: request.projectId, template, data: used });
    return { ...preview, ...rendered };
  } catch (error) {
    return { ...preview, renderError: error instanceof Error ? error.message : String(error) };
  }
}
