// What the state changes of messages cost PostgreSQL in index writes (docs/benchmark.md, "Indexes written per state
// change"), read from the run database's own counters. An update is HOT, writing no index entry, only when no column an
// index names changes and the row's page has room; any other update writes an entry in every index of the table (a
// partial one only when the new row meets its predicate). Backends flush these counters at most once a second, so a
// window's edges may miss a second of updates: the figures are shares and ratios, which that does not move.
import type pg from 'pg';

export interface MessageUpdates {
  readonly updates: number;
  /** Of those, the updates made in place (HOT). */
  readonly hotUpdates: number;
}

export interface MessageWrites extends MessageUpdates {
  /** Indexes on `messages`. */
  readonly indexes: number;
}

export async function messageUpdates(db: pg.Pool): Promise<MessageUpdates> {
  const { rows } = await db.query<MessageUpdates>(
    `SELECT n_tup_upd::float8 AS updates, n_tup_hot_upd::float8 AS "hotUpdates" FROM pg_stat_user_tables WHERE relid = 'messages'::regclass`,
  );
  return rows[0] ?? { updates: 0, hotUpdates: 0 };
}

/** The updates since `before`, with the indexes they may have written to. */
export async function messageWritesSince(db: pg.Pool, before: MessageUpdates): Promise<MessageWrites> {
  const now = await messageUpdates(db);
  const { rows } = await db.query<{ indexes: number }>(`SELECT count(*)::int AS indexes FROM pg_index WHERE indrelid = 'messages'::regclass`);
  return { updates: now.updates - before.updates, hotUpdates: now.hotUpdates - before.hotUpdates, indexes: rows[0]?.indexes ?? 0 };
}

/** Index entries written per update, at most: every index for each update that was not HOT. */
export function indexEntriesPerUpdate(writes: MessageWrites): number {
  return writes.updates > 0 ? ((writes.updates - writes.hotUpdates) * writes.indexes) / writes.updates : 0;
}
