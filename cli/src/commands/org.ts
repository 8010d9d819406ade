// notifyctl org: organizations (the X-Organization-ID of the public API), each on one plan, with its own message
// retention if it has one. Talks to AuthAdminService.
import type { auth } from '@notify/proto';
import { type Column, print } from '../output.ts';
import type { CommandGroup } from './command.ts';

const columns: readonly Column<auth.Organization__Output>[] = [
  { header: 'ID', value: (organization) => organization.id },
  { header: 'NAME', value: (organization) => organization.name },
  { header: 'PLAN', value: (organization) => organization.planId },
  { header: 'CREATED', value: (organization) => organization.createdAt },
  { header: 'RETENTION', value: (organization) => organization.messageRetention || 'default' },
];

export const orgCommands: CommandGroup = {
  name: 'org',
  summary: 'organizations: the tenants integrators name in X-Organization-ID',
  target: 'auth',
  commands: [
    {
      name: 'create',
      summary: 'create an organization on a plan',
      options: {
        name: { type: 'string', value: 'NAME', required: true, description: 'unique organization name' },
        plan: { type: 'string', value: 'ID', required: true, description: 'id of its plan (see: notifyctl plan list)' },
      },
      prepare(flags) {
        const request = { name: flags.string('name'), planId: flags.id('plan') };
        return {
          request,
          async execute({ connections, io, json }) {
            const organization = await connections.authAdmin().call('CreateOrganization', request);
            print(io, json, organization, columns, [organization]);
          },
        };
      },
    },
    {
      name: 'list',
      summary: 'list every organization',
      options: {},
      prepare() {
        return {
          request: {},
          async execute({ connections, io, json }) {
            const response = await connections.authAdmin().call('ListOrganizations', {});
            print(io, json, response, columns, response.organizations);
          },
        };
      },
    },
    {
      name: 'update',
      summary: "change how long an organization's final messages are kept (docs/operations.md, Retention)",
      options: {
        id: { type: 'string', value: 'ID', required: true, description: 'organization id (see: notifyctl org list)' },
        retention: {
          type: 'string',
          value: 'Nd|Nh|default',
          required: true,
          description: 'its own retention, e.g. 90d or 36h, or default for NOTIFY_MESSAGE_RETENTION',
        },
      },
      prepare(flags) {
        const request: auth.UpdateOrganizationRequest = { id: flags.id('id'), messageRetention: flags.optionalRetention('retention') };
        return {
          request,
          async execute({ connections, io, json }) {
            const organization = await connections.authAdmin().call('UpdateOrganization', request);
            print(io, json, organization, columns, [organization]);
          },
        };
      },
    },
  ],
};
