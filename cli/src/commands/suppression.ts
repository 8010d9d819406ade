// notifyctl suppression: a project's suppression list, the addresses no send reaches (a send to one is refused 422 on
// `to`). Talks to dispatch-svc's SuppressionAdminService (admin token). Bounces, complaints and unsubscribes add
// entries by themselves; operators add (`manual`) and remove them here.
import type { dispatch } from '@notify/proto';
import { type Column, print } from '../output.ts';
import type { CommandGroup } from './command.ts';

const columns: readonly Column<dispatch.Suppression__Output>[] = [
  { header: 'ADDRESS', value: (entry) => entry.address, maxWidth: 60 },
  { header: 'REASON', value: (entry) => entry.reason },
  { header: 'SINCE', value: (entry) => entry.createdAt },
  { header: 'MESSAGE', value: (entry) => (entry.messageId > 0 ? entry.messageId : '') },
];

export const suppressionCommands: CommandGroup = {
  name: 'suppression',
  summary: "a project's suppression list: addresses no send reaches, with reason and date",
  target: 'dispatch',
  commands: [
    {
      name: 'list',
      summary: "list a project's suppressed addresses, newest first",
      options: {
        project: { type: 'string', value: 'ID', required: true, description: 'project id' },
        address: { type: 'string', value: 'TEXT', description: 'only addresses containing TEXT (case-insensitive)' },
        limit: { type: 'string', value: 'N', description: 'at most N entries (default 100, up to 500)' },
      },
      prepare(flags) {
        const request = {
          projectId: flags.id('project'),
          search: flags.optionalString('address') ?? '',
          limit: flags.optionalInteger('limit', { min: 1, max: 500 }) ?? 100,
        };
        return {
          request,
          async execute({ connections, io, json }) {
            const response = await connections.suppressionAdmin().call('ListSuppressions', request);
            print(io, json, response, columns, response.suppressions);
          },
        };
      },
    },
    {
      name: 'add',
      summary: 'suppress an address (reason manual): sends to it are refused until it is removed',
      options: {
        project: { type: 'string', value: 'ID', required: true, description: 'project id' },
        address: { type: 'string', value: 'EMAIL', required: true, description: 'the address' },
      },
      prepare(flags) {
        const request = { projectId: flags.id('project'), address: flags.string('address'), reason: 'manual' };
        return {
          request,
          async execute({ connections, io, json }) {
            const entry = await connections.suppressionAdmin().call('AddSuppression', request);
            print(io, json, entry, columns, [entry]);
          },
        };
      },
    },
    {
      name: 'remove',
      summary: 'take an address off the list: sends to it are accepted again',
      options: {
        project: { type: 'string', value: 'ID', required: true, description: 'project id' },
        address: { type: 'string', value: 'EMAIL', required: true, description: 'the address' },
      },
      prepare(flags) {
        const request = { projectId: flags.id('project'), address: flags.string('address') };
        return {
          request,
          async execute({ connections, io, json }) {
            await connections.suppressionAdmin().call('RemoveSuppression', request);
            if (json) io.stdout(`${JSON.stringify({ removed: request.address })}\n`);
            else io.stdout(`removed ${request.address} from the suppression list of project ${request.projectId}\n`);
          },
        };
      },
    },
  ],
};
