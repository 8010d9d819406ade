// notifyctl messages: what a project sent and where each message stands. ListMessages is on DispatchService (the
// gateway's surface); dispatch-svc grants that one method to ADMIN_TOKEN, and nothing else of the service.
import type { dispatch } from '@notify/proto';
import { type Column, print } from '../output.ts';
import type { CommandGroup } from './command.ts';
import { eraseCommand } from './erase.ts';
import { purgeCommand } from './messages-purge.ts';

export const messageStates = ['scheduled', 'queued', 'sending', 'deferred', 'sent', 'failed', 'bounced', 'complained', 'canceled'] as const;

const columns: readonly Column<dispatch.Message__Output>[] = [
  { header: 'ID', value: (message) => message.id },
  { header: 'STATE', value: (message) => message.state },
  { header: 'TEMPLATE', value: (message) => `${message.template} v${message.templateVersion}` },
  { header: 'TO', value: (message) => message.to, maxWidth: 40 },
  { header: 'ATTEMPTS', value: (message) => message.attempts },
  { header: 'CREATED', value: (message) => message.createdAt },
  { header: 'LAST SMTP REPLY / FAILURE', value: (message) => message.failureReason || message.lastSmtpReply },
];

export const messagesCommands: CommandGroup = {
  name: 'messages',
  summary: 'messages of a project and their delivery state',
  target: 'dispatch',
  commands: [
    {
      name: 'list',
      summary: 'list messages, newest first',
      options: {
        project: { type: 'string', value: 'ID', required: true, description: 'project id' },
        state: { type: 'string', value: messageStates.join('|'), description: 'only messages in this state' },
        limit: { type: 'string', value: 'N', description: 'at most N messages (default 50, up to 500)' },
        before: { type: 'string', value: 'ID', description: 'the messages after message ID, newest first (the next page)' },
      },
      prepare(flags) {
        const request = {
          projectId: flags.id('project'),
          state: flags.optionalChoice('state', messageStates) ?? '',
          limit: flags.optionalInteger('limit', { min: 1, max: 500 }) ?? 50,
          beforeId: flags.optionalId('before') ?? 0,
        };
        return {
          request,
          async execute({ connections, io, json }) {
            const response = await connections.dispatch().call('ListMessages', request);
            print(io, json, response, columns, response.messages);
            if (!json && response.nextBeforeId > 0) io.stderr(`notifyctl: more messages: add --before ${response.nextBeforeId}\n`);
          },
        };
      },
    },
    eraseCommand,
    purgeCommand,
  ],
};
