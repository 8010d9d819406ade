// notifyctl messages erase: the right to be forgotten for one recipient of one project (docs/operations.md,
// "Erasure"). Talks to dispatch-svc's ErasureAdminService (admin token); the address is sent, never printed.
import type { dispatch } from '@notify/proto';
import type { Command } from './command.ts';

const changes: readonly { label: string; value: (erasure: dispatch.EraseRecipientResponse__Output) => number }[] = [
  { label: 'scheduled sends canceled', value: (erasure) => erasure.canceled },
  { label: 'events', value: (erasure) => erasure.events },
  { label: 'outbox rows', value: (erasure) => erasure.outbox },
  { label: 'webhook events', value: (erasure) => erasure.webhookEvents },
  { label: 'webhook attempts', value: (erasure) => erasure.webhookAttempts },
  { label: 'idempotency records', value: (erasure) => erasure.idempotencyRecords },
  { label: 'suppression entries kept as a hash', value: (erasure) => erasure.suppressions },
];

export const eraseCommand: Command = {
  name: 'erase',
  summary: "erase a recipient's personal data from a project's messages, events and suppression list (counts and states stay)",
  options: {
    project: { type: 'string', value: 'ID', required: true, description: 'project id' },
    address: { type: 'string', value: 'EMAIL', required: true, description: 'the recipient (compared case-insensitively)' },
  },
  prepare(flags) {
    const request = { projectId: flags.id('project'), address: flags.string('address') };
    return {
      request,
      async execute({ connections, io, json }) {
        const erasure = await connections.erasureAdmin().call('EraseRecipient', request);
        if (json) {
          io.stdout(`${JSON.stringify({ erased: erasure.messages, ...erasure })}\n`);
          return;
        }
        const width = Math.max(...changes.map((change) => change.label.length));
        const lines = changes.map((change) => `  ${change.label.padEnd(width)}  ${change.value(erasure)}\n`);
        io.stdout(`erased ${erasure.messages} message${erasure.messages === 1 ? '' : 's'} of project ${request.projectId}\n${lines.join('')}`);
      },
    };
  },
};
