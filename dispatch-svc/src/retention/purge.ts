// The retention purge (docs/operations.md, "Retention"): deletes messages in a final state whose last change is older
// than their organization's retention, with their events, outbox rows, idempotency records and webhook events,
// deliveries and attempts. A message on its way (scheduled, queued, sending, deferred) is never a candidate, however
// old. Each batch is one short transaction that takes the purge's advisory lock, so one dispatch-svc replica at a time
// purges (the periodic pass of the others finds it taken and waits for its next turn); a pause between batches leaves
// the database to the send path.
import { setTimeout as sleep } from 'node:timers/promises';
import type { Logger } from '@notify/platform';
import { type Pool, withTransaction } from '@notify/platform/database';
import type { DispatchMetrics } from '../metrics.ts';
import {
  type OrganizationRetention,
  oldestKeptFinalMessages,
  organizationRetentions,
  type PurgedRows,
  purgeBatch,
  purgedTables,
  purgeLockKey,
  tableSizes,
} from './retention-store.ts';

export interface PurgeDeps {
  readonly pool: Pool;
  readonly metrics: DispatchMetrics;
  readonly logger: Logger;
  /** NOTIFY_MESSAGE_RETENTION, in hours: the retention of an organization without its own. */
  readonly defaultRetentionHours: number;
  /** Messages per transaction. */
  readonly batchSize: number;
  /** Pause after each full batch, before the next. */
  readonly pauseMs: number;
}

/**
 * `try`: the periodic pass, which gives way when another replica holds the lock. `wait`: an operator's purge, which
 * waits for the leader's batch in progress and then takes its own turns between the leader's.
 */
export type LockMode = 'try' | 'wait';

const noRows = (): PurgedRows => Object.fromEntries(purgedTables.map((table) => [table, 0])) as PurgedRows;

/** One batch, or null when another replica holds the lock (mode `try`). */
async function purgeOneBatch(deps: PurgeDeps, organization: OrganizationRetention, mode: LockMode): Promise<PurgedRows | null> {
  return withTransaction(deps.pool, async (client) => {
    if (mode === 'wait') {
      await client.query({ name: 'retention-leader-wait', text: 'SELECT pg_advisory_xact_lock($1)', values: [purgeLockKey] });
    } else {
      const lock = await client.query<{ leader: boolean }>({
        name: 'retention-leader',
        text: 'SELECT pg_try_advisory_xact_lock($1) AS leader',
        values: [purgeLockKey],
      });
      if (lock.rows[0]?.leader !== true) return null;
    }
    return purgeBatch(client, organization, deps.batchSize);
  });
}

/**
 * The purge and its gauges, for one replica. The gauges are the leader's: a replica is the leader once a purge of its
 * own ran without meeting another's lock, and stops being one when a purge does meet it; the others clear theirs, so
 * that a former leader's stale ages never reach the alert (NotifyRetentionPurgeStuck compares age and retention per
 * organization). Between purges the leader refreshes them on their own beat; each of its purges refreshes them at once.
 */
export class RetentionPurge {
  readonly #deps: PurgeDeps;
  #leader = false;

  constructor(deps: PurgeDeps) {
    this.#deps = deps;
  }

  /**
   * One purge pass over every organization, batch after batch until none is full; stops early when another replica is
   * the leader (mode `try`) or `signal` aborts (shutdown: the batch in progress commits first). Returns the rows it
   * deleted, by table.
   */
  async purge(mode: LockMode, signal?: AbortSignal): Promise<PurgedRows> {
    const deps = this.#deps;
    const total = noRows();
    let leader = true;
    organizations: for (const organization of await organizationRetentions(deps.pool, deps.defaultRetentionHours)) {
      for (;;) {
        if (signal?.aborted) break organizations;
        const purged = await purgeOneBatch(deps, organization, mode);
        if (purged === null) {
          leader = false;
          break organizations;
        }
        for (const table of purgedTables) {
          total[table] += purged[table];
          deps.metrics.retentionPurgedRows.inc({ table }, purged[table]);
        }
        if (purged.messages < deps.batchSize) break;
        await sleep(deps.pauseMs, undefined, signal ? { signal } : {}).catch(() => undefined);
      }
    }
    if (total.messages > 0) deps.logger.info({ purged: total }, 'messages past their retention purged');
    this.#leader = leader;
    await this.updateGauges();
    return total;
  }

  /** Refreshes the gauges if this replica is the leader, else clears them. */
  async updateGauges(): Promise<void> {
    const { pool, metrics, defaultRetentionHours } = this.#deps;
    const readings = this.#leader
      ? await withTransaction(pool, async (client) => ({ kept: await oldestKeptFinalMessages(client, defaultRetentionHours), sizes: await tableSizes(client) }))
      : null;
    // Cleared and set with no await between: a scrape never sees them half done.
    metrics.retentionOldestFinalAge.reset();
    metrics.messageRetention.reset();
    metrics.tableSize.reset();
    if (readings === null) return;
    for (const kept of readings.kept) {
      const labels = { organization_id: String(kept.organizationId) };
      metrics.retentionOldestFinalAge.set(labels, kept.oldestFinalAgeSeconds);
      metrics.messageRetention.set(labels, kept.retentionHours * 3_600);
    }
    for (const { table, bytes } of readings.sizes) metrics.tableSize.set({ table }, bytes);
  }
}
