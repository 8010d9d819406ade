// notifyctl dead-letters: messages that ended `failed`, with why, and re-queueing them for a new delivery. Talks to
// dispatch-svc's DeadLetterAdminService (admin token). A re-queued message goes back to `queued` and is delivered
// again with its template's current version; its attempts continue after the earlier ones.
import type { dispatch } from '@notify/proto';
import { type Flags, UsageError } from '../args.ts';
import { type Column, print } from '../output.ts';
import type { CommandGroup } from './command.ts';

/** As many as RequeueDeadLetters takes in one call; --all has no limit. */
const maxIds = 1_000;

const columns: readonly Column<dispatch.Message__Output>[] = [
  { header: 'ID', value: (message) => message.id },
  { header: 'TEMPLATE', value: (message) => `${message.template} v${message.templateVersion}` },
  { header: 'TO', value: (message) => message.to, maxWidth: 40 },
  { header: 'ATTEMPTS', value: (message) => message.attempts },
  { header: 'FAILED', value: (message) => message.updatedAt },
  { header: 'REASON', value: (message) => message.failureReason, maxWidth: 70 },
  { header: 'LAST SMTP REPLY', value: (message) => message.lastSmtpReply, maxWidth: 70 },
];

/** `--id 12,15,18`: one or more message ids, comma-separated. */
function messageIds(flags: Flags): number[] {
  const raw = flags.string('id');
  const parts = raw.split(',').map((part) => part.trim());
  if (parts.some((part) => !/^\d+$/.test(part) || !Number.isSafeInteger(Number(part)) || Number(part) < 1)) {
    throw new UsageError(`--id must be message ids separated by commas, such as 12,15,18, got '${raw}'`, flags.command);
  }
  const ids = [...new Set(parts.map(Number))];
  if (ids.length > maxIds) throw new UsageError(`--id names ${ids.length} messages; at most ${maxIds} at once (or --all)`, flags.command);
  return ids;
}

export const deadLettersCommands: CommandGroup = {
  name: 'dead-letters',
  summary: 'failed messages, with reason, attempts and last SMTP reply; re-queue them',
  target: 'dispatch',
  commands: [
    {
      name: 'list',
      summary: "list a project's failed messages, newest first",
      options: {
        project: { type: 'string', value: 'ID', required: true, description: 'project id' },
        limit: { type: 'string', value: 'N', description: 'at most N messages (default 50, up to 500)' },
        before: { type: 'string', value: 'ID', description: 'the messages after message ID, newest first (the next page)' },
      },
      prepare(flags) {
        const request = {
          projectId: flags.id('project'),
          limit: flags.optionalInteger('limit', { min: 1, max: 500 }) ?? 50,
          beforeId: flags.optionalId('before') ?? 0,
        };
        return {
          request,
          async execute({ connections, io, json }) {
            const response = await connections.deadLetterAdmin().call('ListDeadLetters', request);
            print(io, json, response, columns, response.messages);
            if (!json && response.nextBeforeId > 0) io.stderr(`notifyctl: more dead letters: add --before ${response.nextBeforeId}\n`);
          },
        };
      },
    },
    {
      name: 'requeue',
      summary: 'deliver failed messages again: back to queued, a new job, attempts numbered after the earlier ones',
      usage: 'notifyctl dead-letters requeue --project ID (--id N[,N...] | --all) [--json]',
      options: {
        project: { type: 'string', value: 'ID', required: true, description: 'project id' },
        id: { type: 'string', value: 'N[,N...]', description: `the failed messages to re-queue, comma-separated (at most ${maxIds})` },
        all: { type: 'boolean', description: 'every failed message of the project' },
      },
      prepare(flags) {
        if (flags.has('id') === flags.flag('all')) throw new UsageError('give --id N[,N...] or --all (one of them)', flags.command);
        const request = { projectId: flags.id('project'), messageIds: flags.flag('all') ? [] : messageIds(flags), all: flags.flag('all') };
        return {
          request,
          async execute({ connections, io, json }) {
            const response = await connections.deadLetterAdmin().call('RequeueDeadLetters', request);
            if (json) {
              io.stdout(`${JSON.stringify(response, null, 2)}\n`);
              return;
            }
            io.stdout(
              `re-queued ${response.requeued.length} message${response.requeued.length === 1 ? '' : 's'}${response.requeued.length > 0 ? `: ${response.requeued.join(', ')}` : ''}\n`,
            );
            for (const skip of response.skipped) io.stderr(`notifyctl: message ${skip.messageId} not re-queued: ${skip.reason.replaceAll('_', ' ')}\n`);
          },
        };
      },
    },
  ],
};
