// RetentionAdminService (notifyctl messages purge, admin token): the retention purge, once, on request.
import type { AsyncHandlers } from '@notify/platform';
import type { dispatch } from '@notify/proto';
import type { RetentionPurge } from './purge.ts';
import { purgedTables } from './retention-store.ts';

export function retentionAdminHandlers(deps: { readonly retention: RetentionPurge }): AsyncHandlers<dispatch.RetentionAdminServiceDefinition> {
  return {
    async PurgeExpiredMessages() {
      const purged = await deps.retention.purge('wait');
      return { deleted: purged.messages, tables: purgedTables.map((table) => ({ table, rows: purged[table] })) };
    },
  };
}
