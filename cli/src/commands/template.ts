// notifyctl template: email templates of a project (LiquidJS subject, HTML and text, optional JSON Schema for `data`).
// Talks to TemplateAdminService; every put makes a new version, which the mailer uses for messages accepted after it.

import type { dispatch } from '@notify/proto';
import { Ajv } from 'ajv';
import ajvFormats from 'ajv-formats';
import { type Flags, UsageError } from '../args.ts';
import { type Column, print } from '../output.ts';
import type { CommandGroup, Context, Prepared } from './command.ts';

const columns: readonly Column<dispatch.Template__Output>[] = [
  { header: 'ID', value: (template) => template.id },
  { header: 'PROJECT', value: (template) => template.projectId },
  { header: 'SLUG', value: (template) => template.slug },
  { header: 'VERSION', value: (template) => template.version },
  { header: 'ACTIVE', value: (template) => template.active },
  { header: 'UNSUBSCRIBE', value: (template) => template.unsubscribe },
  { header: 'SUBJECT', value: (template) => template.subject, maxWidth: 50 },
  { header: 'SCHEMA', value: (template) => template.variablesSchemaJson !== '' },
  { header: 'UPDATED', value: (template) => template.updatedAt },
];

const slugPattern = /^[A-Za-z0-9_-]{1,100}$/;

function slug(flags: Flags): string {
  const value = flags.string('slug');
  if (!slugPattern.test(value)) throw new UsageError(`--slug must be 1-100 characters of A-Z a-z 0-9 _ -, got '${value}'`, flags.command);
  return value;
}

/**
 * Reads --schema-file and checks it compiles the way dispatch-svc compiles it (ajv, draft-07, strict, with formats),
 * so the operator gets the file name and the fault before anything is sent.
 */
async function variablesSchema(flags: Flags): Promise<string> {
  const text = await flags.optionalFile('schema-file');
  if (text === undefined) return '';
  const fail = (reason: string): never => {
    throw new UsageError(`--schema-file '${flags.optionalString('schema-file')}' is not a valid JSON Schema: ${reason}`, flags.command);
  };
  let schema: unknown;
  try {
    schema = JSON.parse(text);
  } catch (error) {
    return fail((error as Error).message);
  }
  if (typeof schema !== 'object' || schema === null || Array.isArray(schema)) return fail('it must be a JSON object');
  const ajv = new Ajv({ allErrors: true, strict: true, strictTypes: false, strictTuples: false, strictRequired: false, logger: false });
  ajvFormats.default(ajv);
  try {
    ajv.compile(schema);
  } catch (error) {
    return fail((error as Error).message);
  }
  return JSON.stringify(schema);
}

const target = {
  project: { type: 'string', value: 'ID', required: true, description: 'project id' },
  slug: { type: 'string', value: 'SLUG', required: true, description: 'template slug, as integrators send it in "template"' },
} as const;

function setActive(active: boolean): (flags: Flags) => Prepared {
  return (flags) => {
    const request = { projectId: flags.id('project'), slug: slug(flags), active };
    return {
      request,
      async execute({ connections, io, json }: Context) {
        const template = await connections.templateAdmin().call('SetTemplateActive', request);
        print(io, json, template, columns, [template]);
      },
    };
  };
}

export const templateCommands: CommandGroup = {
  name: 'template',
  summary: 'email templates of a project',
  target: 'dispatch',
  commands: [
    {
      name: 'put',
      summary: 'create a template, or a new version of it (a new template starts inactive unless --activate)',
      usage:
        'notifyctl template put --project ID --slug SLUG (--subject TEXT | --subject-file FILE) --html-file FILE --text-file FILE [--schema-file FILE] [--activate] [--unsubscribe | --no-unsubscribe] [--json]',
      options: {
        ...target,
        subject: { type: 'string', value: 'TEXT', description: 'subject line (LiquidJS), e.g. "Welcome, {{ name }}!"' },
        'subject-file': { type: 'string', value: 'FILE', description: 'read the subject from a file instead' },
        'html-file': { type: 'string', value: 'FILE', required: true, description: 'HTML body (LiquidJS, output escaped)' },
        'text-file': { type: 'string', value: 'FILE', required: true, description: 'plain-text body (LiquidJS)' },
        'schema-file': { type: 'string', value: 'FILE', description: 'JSON Schema that the "data" of every send must satisfy' },
        activate: { type: 'boolean', description: 'make this version active (usable for sending) at once' },
        unsubscribe: {
          type: 'boolean',
          description: 'its mails carry one-click unsubscribe headers (RFC 8058); a recipient who unsubscribes is suppressed in the project',
        },
        'no-unsubscribe': {
          type: 'boolean',
          description: 'its mails carry no unsubscribe headers (without either flag, the previous choice stays; off for a new template)',
        },
      },
      async prepare(flags) {
        const request: dispatch.PutTemplateRequest = {
          projectId: flags.id('project'),
          slug: slug(flags),
          // A subject file's trailing newline is not part of the subject.
          subject: (await flags.textOrFile('subject', 'subject-file')).trim(),
          html: await flags.file('html-file'),
          text: await flags.file('text-file'),
          variablesSchemaJson: await variablesSchema(flags),
        };
        if (request.subject === '') throw new UsageError('the subject must not be empty', flags.command);
        if (flags.flag('activate')) request.active = true;
        if (flags.flag('unsubscribe') && flags.flag('no-unsubscribe'))
          throw new UsageError('give either --unsubscribe or --no-unsubscribe, not both', flags.command);
        if (flags.flag('unsubscribe')) request.unsubscribe = true;
        if (flags.flag('no-unsubscribe')) request.unsubscribe = false;
        return {
          request,
          async execute({ connections, io, json }) {
            const template = await connections.templateAdmin().call('PutTemplate', request);
            print(io, json, template, columns, [template]);
          },
        };
      },
    },
    { name: 'activate', summary: 'allow sending with a template', options: target, prepare: setActive(true) },
    { name: 'deactivate', summary: 'refuse sends naming a template (422) until it is activated again', options: target, prepare: setActive(false) },
    {
      name: 'list',
      summary: 'list the templates of a project (current version of each)',
      options: { project: target.project },
      prepare(flags) {
        const request = { projectId: flags.id('project') };
        return {
          request,
          async execute({ connections, io, json }) {
            const response = await connections.templateAdmin().call('ListTemplates', request);
            print(io, json, response, columns, response.templates);
          },
        };
      },
    },
  ],
};
