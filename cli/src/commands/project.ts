// notifyctl project: projects own templates and API keys. Talks to AuthAdminService.
import type { auth } from '@notify/proto';
import { print, type Column } from '../output.ts';
import type { CommandGroup } from './command.ts';

const columns: readonly Column<auth.Project__Output>[] = [
  { header: 'ID', value: (project) => project.id },
  { header: 'ORGANIZATION', value: (project) => project.organizationId },
  { header: 'NAME', value: (project) => project.name },
  { header: 'CREATED', value: (project) => project.createdAt },
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
