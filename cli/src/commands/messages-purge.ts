// notifyctl messages purge: the retention purge once, now (docs/operations.md, "Retention"), through dispatch-svc's
// RetentionAdminService. The periodic purge does the same on its own; this is for an operator who will not wait.
import type { Command } from './command.ts';

/** A purge of a large backlog runs batch after batch with pauses between: it may take minutes. */
const purgeDeadlineMs = 30 * 60_000;

export const purgeCommand: Command = {
  name: 'purge',
  summary: "delete now the messages in a final state past their organization's retention, with their events, outbox rows and webhook deliveries",
  options: {},
  prepare() {
    return {
      request: {},
      async execute({ connections, io, json }) {
        const response = await connections.retentionAdmin().call('PurgeExpiredMessages', {}, { deadlineMs: purgeDeadlineMs });
        if (json) {
          io.stdout(`${JSON.stringify({ deleted: response.deleted })}\n`);
          return;
        }
        io.stdout(`purged ${response.deleted} message${response.deleted === 1 ? '' : 's'}\n`);
        for (const { table, rows } of response.tables) if (table !== 'messages' && rows > 0) io.stdout(`  ${table}: ${rows} row${rows === 1 ? '' : 's'}\n`);
      },
    };
  },
};
