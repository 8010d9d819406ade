// The OpenAPI paths and schemas of the template routes (templates/routes.ts; docs/contract.md, "Templates over the API"),
// spread into document.ts. Built from the document's shared parts (parts.ts), so every answer is described the way the
// other management routes' are.
import { listLimits } from '../messages/read-query.ts';
import { maxTemplateLength } from '../send/validation.ts';
import type { Schema } from './parts.ts';
import * as h from './parts.ts';

const description = `A project's templates, as integrators keep them in their own repository and deploy them from CI. Versions are
immutable and numbered 1, 2, 3...; one of them, the active version, is the one sends use. Reads and renders need
\`templates:read\`, changes \`templates:write\`. Same authentication, \`X-Organization-ID\`, languages and error shapes as the
send endpoint; counted against the read bucket. Another project's template is 404 template_not_found, exactly like a
missing or deleted one.`;

const slugSchema = { type: 'string', minLength: 1, maxLength: maxTemplateLength, pattern: '^[A-Za-z0-9_-]+$' };

/** What the operations share. */
function shared() {
  const { ref, response, errorBody, readRateHeaders } = h;
  const etag = {
    ETag: {
      description: "The template's strong entity tag: send it back in If-Match to change it.",
      required: true,
      schema: { type: 'string', pattern: '^"[^"]+"$' },
    },
  };
  const slugParameter = { name: 'slug', in: 'path', required: true, description: 'The template slug.', schema: slugSchema };
  const versionParameter = { name: 'version', in: 'path', required: true, description: 'A version number.', schema: { type: 'integer', minimum: 1 } };
  const ifMatch = (required: boolean, what: string) => ({
    name: 'If-Match',
    in: 'header',
    required,
    description: `The ETag of the template as last read (\`*\` for any): ${what}`,
    schema: { type: 'string' },
  });
  const notFound = response("No live template with this slug in the key's project.", errorBody(['template_not_found']), readRateHeaders);
  const versionNotFound = response(
    'No such template, or no such version of it.',
    errorBody(['template_not_found', 'template_version_not_found']),
    readRateHeaders,
  );
  const invalid = (fields: string) =>
    response(
      `Fields refused (${fields}), each with its messages; or content that does not parse: \`template_invalid\` with each error's part, line and column.`,
      { oneOf: [ref('schemas/FieldErrors'), ref('schemas/TemplateInvalid')] },
      readRateHeaders,
    );
  const stale = response('If-Match names another ETag: the template changed since it was read.', errorBody(['precondition_failed']), readRateHeaders);
  const operation = (operationId: string, summary: string, needs: string, extra: Schema) => ({
    operationId,
    summary: `${summary} (also served with a trailing slash)`,
    description: `${description}\n\n${needs}`,
    security: [{ ApiKey: [] }],
    ...extra,
  });

  return { etag, slugParameter, versionParameter, ifMatch, notFound, versionNotFound, invalid, stale, operation };
}

type Shared = ReturnType<typeof shared>;

function collectionPaths(p: Shared): Record<string, Schema> {
  const { ref, json, response, readRateHeaders, errorBody } = h;
  const { etag, versionNotFound, invalid, operation } = p;
  return {
    '/api/v1/templates': {
      get: operation('listTemplates', "List the key's project's templates by slug", 'Needs `templates:read`. Pass `next` back as `cursor`.', {
        parameters: [...h.requestHeaders, ...h.pageParameters('Templates', maxTemplateLength)],
        responses: {
          ...h.readResponses(),
          '200': response('A page of templates, without their content.', ref('schemas/TemplatePage'), readRateHeaders),
          '422': response('Query parameters refused, each with its messages.', ref('schemas/FieldErrors'), readRateHeaders),
        },
      }),
      post: operation(
        'createTemplate',
        'Create a template: its version 1, active',
        'Needs `templates:write`. The texts are checked as a send would render them.',
        {
          parameters: [...h.requestHeaders],
          requestBody: { required: true, content: json(ref('schemas/TemplateCreateRequest')) },
          responses: {
            ...h.managedWriteResponses(),
            '201': response('The template created.', ref('schemas/Template'), { ...readRateHeaders, ...etag }),
            '409': response('A live template has this slug.', errorBody(['template_exists']), readRateHeaders),
            '422': invalid('slug, subject, html, text, variables_schema, unknown ones'),
          },
        },
      ),
    },
    '/api/v1/templates/render': {
      post: operation(
        'renderTemplate',
        'Render texts or a stored version with test data; never sends, writes nothing',
        'Needs `templates:read`. Give either `slug` (and `version`; the active one when omitted) or `subject`, `html`, `text` (and `variables_schema`), with `data`. Runs in the render pool with the limits of a send.',
        {
          parameters: [...h.requestHeaders],
          requestBody: { required: true, content: json(ref('schemas/TemplateRenderRequest')) },
          responses: {
            ...h.managedWriteResponses(),
            '200': response('The rendered subject, HTML (data escaped, as mailed) and text.', ref('schemas/RenderedTemplate'), readRateHeaders),
            '404': versionNotFound,
            '422': invalid('slug, version, subject, html, text, variables_schema, data, unknown ones; syntax, render and variable errors'),
          },
        },
      ),
    },
  };
}

function itemPaths(p: Shared): Record<string, Schema> {
  const { ref, json, response, readRateHeaders, errorBody } = h;
  const { etag, slugParameter, versionParameter, ifMatch, notFound, versionNotFound, invalid, stale, operation } = p;
  return {
    '/api/v1/templates/{slug}': {
      get: operation('getTemplate', 'Read a template: its active version', 'Needs `templates:read`.', {
        parameters: [slugParameter, ...h.requestHeaders],
        responses: {
          ...h.readResponses(),
          '200': response("The template with its active version's content.", ref('schemas/Template'), { ...readRateHeaders, ...etag }),
          '404': notFound,
        },
      }),
      put: operation(
        'updateTemplate',
        'Upload a new version',
        'Needs `templates:write` and If-Match. The new version is numbered after the latest; it becomes the active one unless `activate` is false.',
        {
          parameters: [slugParameter, ifMatch(true, 'required; a stale one is 412, none 428.'), ...h.requestHeaders],
          requestBody: { required: true, content: json(ref('schemas/TemplateUpdateRequest')) },
          responses: {
            ...h.managedWriteResponses(),
            '200': response('The template after the upload.', ref('schemas/Template'), { ...readRateHeaders, ...etag }),
            '404': notFound,
            '412': stale,
            '422': invalid('subject, html, text, variables_schema, activate, unknown ones'),
            '428': response('No If-Match header.', errorBody(['precondition_required']), readRateHeaders),
          },
        },
      ),
      delete: operation(
        'deleteTemplate',
        'Delete a template',
        'Needs `templates:write` and If-Match. Sends of it are refused from now on, its slug can be created again; messages already accepted keep their content.',
        {
          parameters: [slugParameter, ifMatch(true, 'required; a stale one is 412, none 428.'), ...h.requestHeaders],
          responses: {
            ...h.readResponses(),
            '200': response('The template as it was deleted.', ref('schemas/Template'), readRateHeaders),
            '404': notFound,
            '412': stale,
            '428': response('No If-Match header.', errorBody(['precondition_required']), readRateHeaders),
          },
        },
      ),
    },
    '/api/v1/templates/{slug}/versions': {
      get: operation('listTemplateVersions', "List a template's versions, newest first", 'Needs `templates:read`.', {
        parameters: [slugParameter, ...h.requestHeaders],
        responses: {
          ...h.readResponses(),
          '200': response('Every version, without its content.', ref('schemas/TemplateVersionList'), readRateHeaders),
          '404': notFound,
        },
      }),
    },
    '/api/v1/templates/{slug}/versions/{version}': {
      get: operation('getTemplateVersion', 'Read one version with its content', 'Needs `templates:read`.', {
        parameters: [slugParameter, versionParameter, ...h.requestHeaders],
        responses: {
          ...h.readResponses(),
          '200': response('The version.', ref('schemas/TemplateVersion'), readRateHeaders),
          '404': versionNotFound,
        },
      }),
    },
    '/api/v1/templates/{slug}/versions/{version}/activate': {
      post: operation('activateTemplateVersion', 'Make a version the one sends use', 'Needs `templates:write`; If-Match is optional here.', {
        parameters: [slugParameter, versionParameter, ifMatch(false, 'when given, a stale one is 412.'), ...h.requestHeaders],
        responses: {
          ...h.readResponses(),
          '200': response('The template with the version activated.', ref('schemas/Template'), { ...readRateHeaders, ...etag }),
          '404': versionNotFound,
          '412': stale,
        },
      }),
    },
  };
}

function templateSchemas(): Record<string, Schema> {
  const { ref } = h;
  const texts = {
    subject: { type: 'string', description: 'Liquid; required, not blank.' },
    html: { type: 'string', description: 'Liquid; the data is HTML-escaped. An html or a text part is required.' },
    text: { type: 'string', description: 'Liquid.' },
    variables_schema: {
      type: ['object', 'null'],
      additionalProperties: true,
      description: 'A JSON Schema `data` must satisfy for a send to be accepted; null for none.',
    },
  };
  const timestamps = { created_at: { type: 'string', format: 'date-time' }, updated_at: { type: 'string', format: 'date-time' } };
  const summary = {
    slug: slugSchema,
    active: { type: 'boolean', description: 'Sends may use it: false only when an operator switched it off (notifyctl).' },
    active_version: { type: 'integer', minimum: 1, description: 'The version sends use.' },
    latest_version: { type: 'integer', minimum: 1, description: 'The newest version, active or not.' },
    ...timestamps,
  };
  const object = (properties: Schema, required: readonly string[] = Object.keys(properties)) => ({
    type: 'object',
    required,
    additionalProperties: false,
    properties,
  });
  return {
    TemplateSummary: object(summary),
    Template: object({ ...summary, ...texts }),
    TemplatePage: object({
      results: { type: 'array', maxItems: listLimits.max, items: ref('schemas/TemplateSummary') },
      next: { type: ['string', 'null'], description: 'The cursor of the next page; null on the last page.' },
    }),
    TemplateCreateRequest: object({ slug: slugSchema, ...texts }, ['slug', 'subject']),
    TemplateUpdateRequest: object(
      { ...texts, activate: { type: 'boolean', default: true, description: 'False: keep the active version; activate this one later.' } },
      ['subject'],
    ),
    TemplateRenderRequest: object(
      {
        slug: slugSchema,
        version: { type: 'integer', minimum: 1, maximum: 2_147_483_647, description: 'With `slug`: this version rather than the active one.' },
        ...texts,
        data: { type: 'object', additionalProperties: true, description: "The test data, as a send's `data`; `{}` when omitted." },
      },
      [],
    ),
    RenderedTemplate: object({ subject: { type: 'string' }, html: { type: 'string' }, text: { type: 'string' } }),
    TemplateVersionSummary: object({ version: { type: 'integer', minimum: 1 }, active: { type: 'boolean' }, created_at: timestamps.created_at }),
    TemplateVersion: object({ version: { type: 'integer', minimum: 1 }, active: { type: 'boolean' }, created_at: timestamps.created_at, ...texts }),
    TemplateVersionList: object({ results: { type: 'array', items: ref('schemas/TemplateVersionSummary') } }),
    TemplateInvalid: object({
      detail: { type: 'string' },
      code: { const: 'template_invalid' },
      errors: {
        type: 'array',
        minItems: 1,
        items: object({
          part: { enum: ['subject', 'html', 'text', 'data', null], description: 'null when the render as a whole was stopped (its time limit).' },
          line: { type: ['integer', 'null'], minimum: 1 },
          column: { type: ['integer', 'null'], minimum: 1 },
          message: { type: 'string', description: "The parser's or renderer's own message (English); a variable's in the negotiated language." },
        }),
      },
    }),
  };
}

export function templateOpenApi(): { paths: Record<string, Schema>; schemas: Record<string, Schema> } {
  const p = shared();
  return { paths: { ...collectionPaths(p), ...itemPaths(p) }, schemas: templateSchemas() };
}
