// notifyctl audit: the audit log of an organization, every change made through the management API (templates,
// suppressions, webhook endpoints, domains, keys) with the key that made it. Talks to dispatch-svc's AuditAdminService
// (admin token).
import type { dispatch } from '@notify/proto';
import { type Column, print } from '../output.ts';
import type { CommandGroup } from './command.ts';

const columns: readonly Column<dispatch.AuditEvent__Output>[] = [
  { header: 'ID', value: (event) => event.id },
  { header: 'WHEN', value: (event) => event.createdAt },
  { header: 'PROJECT', value: (event) => event.projectId },
  { header: 'KEY', value: (event) => event.apiKeyId },
  { header: 'ACTION', value: (event) => event.action },
  { header: 'TARGET', value: (event) => event.target, maxWidth: 40 },
  { header: 'DETAIL', value: (event) => event.detailJson, maxWidth: 70 },
];

export const auditCommands: CommandGroup = {
  name: 'audit',
  summary: 'who changed what through the management API, and when',
  target: 'dispatch',
  commands: [
    {
      name: 'list',
      summary: "list an organization's changes, newest first",
      options: {
        organization: { type: 'string', value: 'ID', required: true, description: 'organization id' },
        project: { type: 'string', value: 'ID', description: "only this project's changes" },
        limit: { type: 'string', value: 'N', description: 'at most N entries (default 50, up to 500)' },
        before: { type: 'string', value: 'ID', description: 'the entries older than entry ID (the next page)' },
      },
      prepare(flags) {
        const request = {
          organizationId: flags.id('organization'),
          projectId: flags.optionalId('project') ?? 0,
          limit: flags.optionalInteger('limit', { min: 1, max: 500 }) ?? 50,
          beforeId: flags.optionalId('before') ?? 0,
        };
        return {
          request,
          async execute({ connections, io, json }) {
            const response = await connections.auditAdmin().call('ListAuditEvents', request);
            print(io, json, response, columns, response.events);
            if (!json && response.nextBeforeId > 0) io.stderr(`notifyctl: more entries: add --before ${response.nextBeforeId}\n`);
          },
        };
      },
    },
  ],
};
