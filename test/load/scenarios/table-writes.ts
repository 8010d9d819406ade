// What the updates of a table cost PostgreSQL in index writes (docs/benchmark.md, "Indexes written per state change"),
// read from the run database's own counters: the state changes of `messages` in the delivery drain, the claims and
// records of `webhook_deliveries` in the webhook burst. An update is HOT, writing no index entry, only when no column
// an index names changes and the row's page has room; any other update writes an entry in every index of the table
// (a partial one only when the new row meets its predicate).
// A backend flushes these counters at most once a second, and one that falls idle within a second of its last flush
// holds them up to 10 s more, so a window's edges miss some of its updates (the webhook burst, a few seconds long, may
// miss half): the figures are shares and ratios, which that does not move.
import type pg from 'pg';

/** The tables whose updates the bench follows. */
export type UpdatedTable = 'messages' | 'webhook_deliveries';

export interface TableUpdates {
  readonly updates: number;
  /** Of those, the updates made in place (HOT). */
  readonly hotUpdates: number;
}

export interface TableWrites extends TableUpdates {
  /** Indexes on the table. */
  readonly indexes: number;
}

export async function tableUpdates(db: pg.Pool, table: UpdatedTable): Promise<TableUpdates> {
  const { rows } = await db.query<TableUpdates>(
    `SELECT n_tup_upd::float8 AS updates, n_tup_hot_upd::float8 AS "hotUpdates" FROM pg_stat_user_tables WHERE relid = $1::regclass`,
    [table],
  );
  return rows[0] ?? { updates: 0, hotUpdates: 0 };
}

/** The updates of `table` since `before`, with the indexes they may have written to. */
export async function tableWritesSince(db: pg.Pool, table: UpdatedTable, before: TableUpdates): Promise<TableWrites> {
  const now = await tableUpdates(db, table);
  const { rows } = await db.query<{ indexes: number }>('SELECT count(*)::int AS indexes FROM pg_index WHERE indrelid = $1::regclass', [table]);
  return { updates: now.updates - before.updates, hotUpdates: now.hotUpdates - before.hotUpdates, indexes: rows[0]?.indexes ?? 0 };
}

/** Index entries written per update, at most: every index for each update that was not HOT. */
export function indexEntriesPerUpdate(writes: TableWrites): number {
  return writes.updates > 0 ? ((writes.updates - writes.hotUpdates) * writes.indexes) / writes.updates : 0;
}
