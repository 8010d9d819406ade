// The project's templates over the public API (docs/contract.md, "Templates over the API"): list, create, read, update
// (a new immutable version, active unless the body says "activate": false), delete, the versions, activating one, and
// rendering a body or a stored version with test data (never sent, nothing written). Reads and renders need
// templates:read, changes templates:write; admitted like the other management routes. An update or a delete must name
// the current ETag in If-Match (428 without, 412 when stale), so two deploys never overwrite each other unseen.
// dispatch-svc matches every call on project and organization, checks syntax and renders in its render pool.
import { status } from '@grpc/grpc-js';
import type Router from '@koa/router';
import { RemoteError } from '@notify/platform';
import type { dispatch, Scope } from '@notify/proto';
import type { Middleware, ParameterizedContext } from 'koa';
import { type AdmitDeps, admit } from '../auth/admit.ts';
import { ApiError, FieldErrors, type FieldMessage } from '../errors/api-error.ts';
import { unexpectedRemoteFailure } from '../errors/dependency.ts';
import type { GatewayState } from '../http/state.ts';
import { type Text, text, translate } from '../i18n/messages.ts';
import { pageLimit, type QueryString, queryValues } from '../messages/read-query.ts';
import { ensureJsonBody, parseJsonObject, readBody } from '../send/body.ts';
import type { DispatchClient } from '../send/dispatch.ts';
import { maxDataArrayItems, maxDataDepth, maxDataElements, shapeOf } from '../send/validation.ts';
import { variableFault } from '../send/variable-faults.ts';

export interface TemplateRouteDeps extends AdmitDeps {
  readonly dispatch: DispatchClient;
  /** NOTIFY_MAX_BODY_BYTES. */
  readonly maxBodyBytes: number;
}

const slugPattern = /^[A-Za-z0-9_-]{1,100}$/;
const versionPattern = /^[1-9]\d{0,8}$/;
/** Versions are int32 in the database and on the wire. */
const maxVersion = 2_147_483_647;

const templateNotFound = (cause?: unknown): ApiError => new ApiError(404, 'template_not_found', text('template_not_found'), { cause });
const versionNotFound = (cause?: unknown): ApiError => new ApiError(404, 'template_version_not_found', text('template_version_not_found'), { cause });

/** Content that does not parse or render: answered 422 `template_invalid` with each problem's part, line and column. */
class TemplateProblems extends Error {
  override name = 'TemplateProblems';
  readonly problems: readonly dispatch.TemplateProblem__Output[];
  constructor(problems: readonly dispatch.TemplateProblem__Output[], options: { cause?: unknown } = {}) {
    super('422 template_invalid', options);
    this.problems = problems;
  }
}

const parseProblem = (entry: string): dispatch.TemplateProblem__Output => JSON.parse(entry) as dispatch.TemplateProblem__Output;

/** dispatch-svc's refusals of these calls as the contract's. */
function refusalOf(error: unknown): unknown {
  if (!(error instanceof RemoteError)) return unexpectedRemoteFailure(error);
  const is = (code: status, reason: string) => error.status === code && error.reason === reason;
  if (is(status.NOT_FOUND, 'template_not_found')) return templateNotFound(error);
  if (is(status.NOT_FOUND, 'template_version_not_found')) return versionNotFound(error);
  if (is(status.ALREADY_EXISTS, 'template_exists')) return new ApiError(409, 'template_exists', text('template_exists'), { cause: error });
  if (is(status.FAILED_PRECONDITION, 'precondition_failed')) return new ApiError(412, 'precondition_failed', text('precondition_failed'), { cause: error });
  if (is(status.INVALID_ARGUMENT, 'template_invalid')) return new TemplateProblems(error.fields.map(parseProblem), { cause: error });
  if (is(status.INVALID_ARGUMENT, 'variables_schema_invalid'))
    return FieldErrors.of('variables_schema', text('templates.variables_schema', { problem: error.fields[0] ?? '' }));
  // The gateway judged every other parameter; what dispatch-svc can still refuse is the cursor.
  if (is(status.INVALID_ARGUMENT, 'invalid_argument') && error.message.includes('cursor:')) return FieldErrors.of('cursor', text('messages.cursor'));
  return unexpectedRemoteFailure(error);
}

/** A route's handler, its dispatch-svc refusals turned into the contract's, and template problems answered in the caller's language. */
function route(handler: Middleware<GatewayState>): Middleware<GatewayState> {
  return async (ctx, next) => {
    try {
      await handler(ctx, next);
    } catch (error) {
      const refusal = error instanceof ApiError || error instanceof FieldErrors ? error : refusalOf(error);
      if (!(refusal instanceof TemplateProblems)) throw refusal;
      ctx.status = 422;
      ctx.body = {
        detail: translate(ctx.state.language, text('template_invalid')),
        code: 'template_invalid',
        errors: refusal.problems.map((problem) => ({
          part: problem.part === '' ? null : problem.part,
          line: problem.line === 0 ? null : problem.line,
          column: problem.column === 0 ? null : problem.column,
          message: messageOf(ctx, problem),
        })),
      };
    }
  };
}

/** The parser's and renderer's messages are LiquidJS's own (English); a variable's is the send's, in the caller's language. */
function messageOf(ctx: ParameterizedContext<GatewayState>, problem: dispatch.TemplateProblem__Output): string {
  if (problem.part !== 'data') return problem.message;
  const fault = variableFault(problem.message);
  return typeof fault === 'string' ? fault : translate(ctx.state.language, fault);
}

const orNull = (json: string): unknown => (json === '' ? null : JSON.parse(json));

function summaryBody(found: dispatch.ApiTemplate__Output) {
  const template = found.template as dispatch.Template__Output;
  return {
    slug: template.slug,
    active: template.active,
    active_version: template.version,
    latest_version: found.latestVersion,
    created_at: found.createdAt,
    updated_at: template.updatedAt,
  };
}

function templateBody(found: dispatch.ApiTemplate__Output) {
  const template = found.template as dispatch.Template__Output;
  const { subject, html, text: plain, variablesSchemaJson } = template;
  return { ...summaryBody(found), subject, html, text: plain, variables_schema: orNull(variablesSchemaJson) };
}

function versionBody(version: dispatch.ApiTemplateVersion__Output, withContent: boolean) {
  const listed = { version: version.version, active: version.active, created_at: version.createdAt };
  if (!withContent) return listed;
  return { ...listed, subject: version.subject, html: version.html, text: version.text, variables_schema: orNull(version.variablesSchemaJson) };
}

/** The answer with a template and its ETag. */
function answerTemplate(ctx: ParameterizedContext<GatewayState>, found: dispatch.ApiTemplate__Output, code = 200): void {
  ctx.status = code;
  ctx.set('ETag', found.etag);
  ctx.body = templateBody(found);
}

const paramsOf = (ctx: ParameterizedContext<GatewayState>): Record<string, string> => (ctx as unknown as { params: Record<string, string> }).params;

/** The path's slug; one that cannot be a slug names no template. */
function slugOf(ctx: ParameterizedContext<GatewayState>): string {
  const slug = paramsOf(ctx).slug ?? '';
  if (!slugPattern.test(slug)) throw templateNotFound();
  return slug;
}

function versionOf(ctx: ParameterizedContext<GatewayState>): number {
  const version = paramsOf(ctx).version ?? '';
  if (!versionPattern.test(version)) throw versionNotFound();
  return Number(version);
}

function scopeOf(access: { projectId: number; organizationId: number }) {
  return { projectId: access.projectId, organizationId: access.organizationId };
}

/** The If-Match a change needs: 428 without one. */
function ifMatchOf(ctx: ParameterizedContext<GatewayState>): string {
  const ifMatch = ctx.get('If-Match').trim();
  if (ifMatch === '') throw new ApiError(428, 'precondition_required', text('precondition_required'));
  return ifMatch;
}

type Faults = Map<string, FieldMessage[]>;

/** A string field: undefined when absent; a fault when it is not a string. */
function stringField(body: Record<string, unknown>, name: string, faults: Faults): string | undefined {
  const value = body[name];
  if (value === undefined) return undefined;
  if (typeof value !== 'string') faults.set(name, [text('field.type_string')]);
  return typeof value === 'string' ? value : undefined;
}

/** subject, html, text and variables_schema: a subject and at least one of html and text, not blank. */
function contentOf(body: Record<string, unknown>, faults: Faults): Required<dispatch.ApiTemplateContent> {
  const subject = stringField(body, 'subject', faults);
  const html = stringField(body, 'html', faults) ?? '';
  const plain = stringField(body, 'text', faults) ?? '';
  if (body.subject === undefined) faults.set('subject', [text('field.required')]);
  else if (subject?.trim() === '') faults.set('subject', [text('field.blank')]);
  if (!faults.has('html') && !faults.has('text') && html.trim() === '' && plain.trim() === '') faults.set('html', [text('templates.content')]);
  const schema = body.variables_schema;
  const isObject = typeof schema === 'object' && schema !== null && !Array.isArray(schema);
  if (schema !== undefined && schema !== null && !isObject) faults.set('variables_schema', [text('field.type_object')]);
  return { subject: subject ?? '', html, text: plain, variablesSchemaJson: isObject ? JSON.stringify(schema) : '' };
}

function refuseUnknown(body: Record<string, unknown>, known: readonly string[], faults: Faults): void {
  for (const field of Object.keys(body)) if (!known.includes(field)) faults.set(field, [text('field.unknown')]);
}

function throwFaults(faults: Faults): void {
  if (faults.size > 0) throw new FieldErrors(faults);
}

/** The JSON object body of a change: its size (413) before the key, then the media type (415) and JSON (400). */
async function changeBody(deps: TemplateRouteDeps, ctx: ParameterizedContext<GatewayState>, scope: Scope, preconditioned: boolean) {
  const bytes = await readBody(ctx.req, deps.maxBodyBytes);
  const access = await admit(deps, ctx, scope);
  const ifMatch = preconditioned ? ifMatchOf(ctx) : '';
  ensureJsonBody(ctx.get('Content-Type') || undefined, ctx.get('Content-Encoding') || undefined);
  return { access, ifMatch, body: parseJsonObject(bytes) };
}

const listParameters = ['limit', 'cursor'] as const;

function listQueryOf(query: QueryString): { limit: number; cursor: string } {
  const faults: Faults = new Map();
  const values = queryValues(query, listParameters, faults);
  const limit = pageLimit(values.get('limit') ?? '', faults);
  const cursor = values.get('cursor') ?? '';
  if (cursor !== '' && !slugPattern.test(cursor)) faults.set('cursor', [text('messages.cursor')]);
  throwFaults(faults);
  return { limit, cursor };
}

/** The limits of a send's `data` (send/validation.ts), for a render's test data. */
function dataFaults(data: object): Text[] {
  const shape = shapeOf(data);
  const faults: Text[] = [];
  if (shape.depth > maxDataDepth) faults.push(text('data.depth', { max: maxDataDepth }));
  if (shape.reservedKey) faults.push(text('data.keys'));
  if (shape.longestArray > maxDataArrayItems) faults.push(text('data.array_items', { max: maxDataArrayItems }));
  if (shape.elements > maxDataElements) faults.push(text('data.elements', { max: maxDataElements }));
  return faults;
}

/** A render's body: a stored template (slug, optional version) or inline texts, and test `data`. */
function renderRequestOf(body: Record<string, unknown>): Omit<dispatch.RenderApiTemplateRequest, 'organizationId' | 'projectId'> {
  const faults: Faults = new Map();
  refuseUnknown(body, ['slug', 'version', 'subject', 'html', 'text', 'variables_schema', 'data'], faults);
  const { data = {} } = body;
  const dataIsObject = typeof data === 'object' && data !== null && !Array.isArray(data);
  if (!dataIsObject) faults.set('data', [text('field.type_object')]);
  else if (dataFaults(data).length > 0) faults.set('data', dataFaults(data));
  const request = { slug: '', version: 0, content: { subject: '', html: '', text: '', variablesSchemaJson: '' }, dataJson: JSON.stringify(data) };
  if (body.slug === undefined) {
    if (body.version !== undefined) faults.set('version', [text('templates.source')]);
    request.content = contentOf(body, faults);
  } else {
    for (const field of ['subject', 'html', 'text', 'variables_schema']) if (body[field] !== undefined) faults.set(field, [text('templates.source')]);
    if (typeof body.slug !== 'string' || !slugPattern.test(body.slug)) faults.set('slug', [text('template.slug')]);
    const { version } = body;
    if (version !== undefined && !(Number.isInteger(version) && (version as number) >= 1 && (version as number) <= maxVersion))
      faults.set('version', [text('templates.version')]);
    request.slug = String(body.slug);
    request.version = typeof version === 'number' ? version : 0;
  }
  throwFaults(faults);
  return request;
}

function templateRoutes(deps: TemplateRouteDeps) {
  const read = async (ctx: ParameterizedContext<GatewayState>) => scopeOf(await admit(deps, ctx, 'templates:read'));
  return {
    list: route(async (ctx) => {
      const scope = await read(ctx);
      const page = await deps.dispatch.call('ListApiTemplates', { ...scope, ...listQueryOf(ctx.query) });
      ctx.body = { results: page.templates.map(summaryBody), next: page.nextCursor === '' ? null : page.nextCursor };
    }),
    create: route(async (ctx) => {
      const { access, body } = await changeBody(deps, ctx, 'templates:write', false);
      const faults: Faults = new Map();
      refuseUnknown(body, ['slug', 'subject', 'html', 'text', 'variables_schema'], faults);
      if (body.slug === undefined) faults.set('slug', [text('field.required')]);
      else if (typeof body.slug !== 'string' || !slugPattern.test(body.slug)) faults.set('slug', [text('template.slug')]);
      const content = contentOf(body, faults);
      throwFaults(faults);
      const created = await deps.dispatch.call('CreateApiTemplate', { ...scopeOf(access), apiKeyId: access.keyId, slug: String(body.slug), content });
      answerTemplate(ctx, created, 201);
    }),
    get: route(async (ctx) => {
      const scope = await read(ctx);
      answerTemplate(ctx, await deps.dispatch.call('GetApiTemplate', { ...scope, slug: slugOf(ctx) }));
    }),
    update: route(async (ctx) => {
      const { access, ifMatch, body } = await changeBody(deps, ctx, 'templates:write', true);
      const slug = slugOf(ctx);
      const faults: Faults = new Map();
      refuseUnknown(body, ['subject', 'html', 'text', 'variables_schema', 'activate'], faults);
      const content = contentOf(body, faults);
      if (body.activate !== undefined && typeof body.activate !== 'boolean') faults.set('activate', [text('field.type_boolean')]);
      throwFaults(faults);
      const request = { ...scopeOf(access), apiKeyId: access.keyId, slug, ifMatch, content, keepActiveVersion: body.activate === false };
      answerTemplate(ctx, await deps.dispatch.call('UpdateApiTemplate', request));
    }),
    remove: route(async (ctx) => {
      const access = await admit(deps, ctx, 'templates:write');
      const ifMatch = ifMatchOf(ctx);
      ctx.body = templateBody(await deps.dispatch.call('DeleteApiTemplate', { ...scopeOf(access), apiKeyId: access.keyId, slug: slugOf(ctx), ifMatch }));
    }),
    versions: route(async (ctx) => {
      const scope = await read(ctx);
      const listed = await deps.dispatch.call('ListApiTemplateVersions', { ...scope, slug: slugOf(ctx) });
      ctx.body = { results: listed.versions.map((version) => versionBody(version, false)) };
    }),
    version: route(async (ctx) => {
      const scope = await read(ctx);
      const slug = slugOf(ctx);
      ctx.body = versionBody(await deps.dispatch.call('GetApiTemplateVersion', { ...scope, slug, version: versionOf(ctx) }), true);
    }),
    activate: route(async (ctx) => {
      const access = await admit(deps, ctx, 'templates:write');
      const slug = slugOf(ctx);
      const request = { ...scopeOf(access), apiKeyId: access.keyId, slug, version: versionOf(ctx), ifMatch: ctx.get('If-Match').trim() };
      answerTemplate(ctx, await deps.dispatch.call('ActivateApiTemplateVersion', request));
    }),
    render: route(async (ctx) => {
      const { access, body } = await changeBody(deps, ctx, 'templates:read', false);
      const rendered = await deps.dispatch.call('RenderApiTemplate', { ...scopeOf(access), ...renderRequestOf(body) });
      if (rendered.problems.length > 0) throw new TemplateProblems(rendered.problems);
      ctx.body = { subject: rendered.subject, html: rendered.html, text: rendered.text };
    }),
  };
}

/** Every template route, each also served without its trailing slash. */
export function registerTemplateRoutes(router: Router<GatewayState>, deps: TemplateRouteDeps): void {
  const templates = templateRoutes(deps);
  const both = (path: string): string[] => [`${path}/`, path];
  for (const path of both('/api/v1/templates')) {
    router.get('/api/v1/templates/', path, templates.list);
    router.post('/api/v1/templates/', path, templates.create);
  }
  for (const path of both('/api/v1/templates/render')) router.post('/api/v1/templates/render', path, templates.render);
  for (const path of both('/api/v1/templates/:slug')) {
    router.get('/api/v1/templates/{slug}/', path, templates.get);
    router.put('/api/v1/templates/{slug}/', path, templates.update);
    router.delete('/api/v1/templates/{slug}/', path, templates.remove);
  }
  for (const path of both('/api/v1/templates/:slug/versions')) router.get('/api/v1/templates/{slug}/versions/', path, templates.versions);
  for (const path of both('/api/v1/templates/:slug/versions/:version')) router.get('/api/v1/templates/{slug}/versions/{version}/', path, templates.version);
  for (const path of both('/api/v1/templates/:slug/versions/:version/activate'))
    router.post('/api/v1/templates/{slug}/versions/{version}/activate', path, templates.activate);
}
