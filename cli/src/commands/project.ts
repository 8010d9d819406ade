// notifyctl project: projects own templates and API keys. Talks to AuthAdminService; `update --smtp-url` to dispatch-svc's
// ProjectRelayAdminService, which keeps a project's own relays sealed (the URLs hold credentials: only `host:port` is
// ever printed).
import type { auth, dispatch } from '@notify/proto';
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
        'smtp-url': {
          type: 'string',
          value: 'URL',
          required: true,
          description: 'smtp:// or smtps:// relays, comma-separated, tried in order (credentials in the URL, stored sealed); `default` clears them',
        },
      },
      prepare(flags) {
        const smtpUrl = flags.string('smtp-url');
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
