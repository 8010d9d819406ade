// notifyctl project: projects own templates and API keys. Talks to AuthAdminService; `update` to dispatch-svc's
// ProjectRelayAdminService, which keeps a project's own relays sealed (the URLs hold credentials: they are read from a
// file or standard input, and only `host:port` is ever printed).
import type { auth, dispatch } from '@notify/proto';
import { UsageError } from '../args.ts';
import { type Column, print } from '../output.ts';
import type { CommandGroup } from './command.ts';

const columns: readonly Column<auth.Project__Output>[] = [
  { header: 'ID', value: (project) => project.id },
  { header: 'ORGANIZATION', value: (project) => project.organizationId },
  { header: 'NAME', value: (project) => project.name },
  { header: 'CREATED', value: (project) => project.createdAt },
];

const relayColumns: readonly Column<dispatch.ProjectRelay__Output>[] = [
  { header: 'ID', value: (relay) => relay.projectId },
  { header: 'RELAYS', value: (relay) => (relay.relays.length === 0 ? 'default (SMTP_URL)' : relay.relays.join(', ')), maxWidth: 200 },
];

/** Whether any of the comma-separated relay URLs carries a password (`smtps://user:password@host`). */
function carriesPassword(urls: string): boolean {
  return urls.split(',').some((url) => {
    try {
      return new URL(url.trim()).password !== '';
    } catch {
      return /\/\/[^/@]*:[^/@]*@/.test(url);
    }
  });
}

export const projectCommands: CommandGroup = {
  name: 'project',
  summary: 'projects of an organization: each owns templates and API keys',
  target: 'auth',
  commands: [
    {
      name: 'create',
      summary: 'create a project in an organization',
      options: {
        org: { type: 'string', value: 'ID', required: true, description: 'organization id' },
        name: { type: 'string', value: 'NAME', required: true, description: 'project name, unique within the organization' },
      },
      prepare(flags) {
        const request = { organizationId: flags.id('org'), name: flags.string('name') };
        return {
          request,
          async execute({ connections, io, json }) {
            const project = await connections.authAdmin().call('CreateProject', request);
            print(io, json, project, columns, [project]);
          },
        };
      },
    },
    {
      name: 'update',
      summary: "set the SMTP relays a project's mail leaves through, or `default` for the mailers' SMTP_URL",
      target: 'dispatch',
      options: {
        id: { type: 'string', value: 'ID', required: true, description: 'project id' },
        'smtp-url-file': {
          type: 'string',
          value: 'FILE',
          description:
            'smtp:// or smtps:// relays, comma-separated, tried in order, on the first line of FILE (- reads standard input): their passwords stay out of shell history and ps; stored sealed',
        },
        'smtp-url': {
          type: 'string',
          value: 'URL',
          description: '`default` clears the relays (the mailers use SMTP_URL again); relays without a password may be given here too',
        },
      },
      async prepare(flags) {
        if (flags.has('smtp-url') === flags.has('smtp-url-file')) throw new UsageError('give either --smtp-url-file or --smtp-url', flags.command);
        const smtpUrl = flags.has('smtp-url') ? flags.string('smtp-url') : await flags.secretFile('smtp-url-file');
        if (flags.has('smtp-url') && carriesPassword(smtpUrl)) flags.refuseSecret('smtp-url', 'smtp-url-file');
        const request = { projectId: flags.id('id'), smtpUrl: smtpUrl === 'default' ? '' : smtpUrl };
        return {
          request,
          async execute({ connections, io, json }) {
            const relay = await connections.projectRelayAdmin().call('SetProjectRelay', request);
            print(io, json, relay, relayColumns, [relay]);
          },
        };
      },
    },
    {
      name: 'list',
      summary: 'list the projects of an organization',
      options: { org: { type: 'string', value: 'ID', required: true, description: 'organization id' } },
      prepare(flags) {
        const request = { organizationId: flags.id('org') };
        return {
          request,
          async execute({ connections, io, json }) {
            const response = await connections.authAdmin().call('ListProjects', request);
            print(io, json, response, columns, response.projects);
          },
        };
      },
    },
  ],
};
