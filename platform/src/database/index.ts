// PostgreSQL: pooled connections (pg, instrumented by OpenTelemetry), transactions, and the schema migrations.
import { readdirSync } from 'node:fs';
import { parse } from 'node:path';
import { fileURLToPath } from 'node:url';
import { runner } from 'node-pg-migrate';
import pg from 'pg';
import type { Logger } from '../logger.ts';

export type { Pool, PoolClient } from 'pg';

export const migrationsDir = fileURLToPath(new URL('../../migrations', import.meta.url));

// int8 (bigserial ids, counts) as JS numbers: ids stay far below 2^53.
pg.types.setTypeParser(pg.types.builtins.INT8, (value) => Number(value));

export function createPool(url: string, options: { max: number; applicationName: string; logger: Logger }): pg.Pool {
  const pool = new pg.Pool({
    connectionString: url,
    max: options.max,
    application_name: options.applicationName,
    connectionTimeoutMillis: 3_000,
    idleTimeoutMillis: 30_000,
  });
  // An idle client losing its connection (database restart) must not crash the process; the pool replaces it.
  pool.on('error', (error) => options.logger.warn({ err: error }, 'idle database connection lost'));
  return pool;
}

/** The readiness check of a pool: a real round trip, so a database that stopped answering takes the replica out of rotation. */
export async function databaseReachable(pool: pg.Pool): Promise<boolean> {
  return (await pool.query('SELECT 1')).rowCount === 1;
}

/**
 * Runs `work` in one transaction: committed when it resolves, rolled back when it throws. While the client is checked
 * out, the pool no longer listens for its errors, and pg emits 'error' on a client whose connection ends (a database
 * restart terminates every backend) even between queries; unheard, that event would kill the process. So the
 * transaction listens itself, fails with that error, and the broken client is destroyed rather than pooled.
 */
export async function withTransaction<T>(pool: pg.Pool, work: (client: pg.PoolClient) => Promise<T>): Promise<T> {
  const client = await pool.connect();
  let connectionError: Error | undefined;
  const onError = (error: Error): void => {
    connectionError ??= error;
  };
  client.on('error', onError);
  try {
    await client.query('BEGIN');
    const result = await work(client);
    await client.query('COMMIT');
    return result;
  } catch (error) {
    // After a connection error pg only says "not queryable"; the connection's own error (SQLSTATE 57P01, a reset socket)
    // is the one callers classify as a dependency outage.
    if (connectionError) throw connectionError;
    await client.query('ROLLBACK').catch(() => undefined);
    throw error;
  } finally {
    client.off('error', onError);
    client.release(connectionError);
  }
}

const migrationsTable = 'pgmigrations';

/**
 * The migrations of this release that the database has not recorded (all of them when it has no record at all): what
 * a service must not start on. It only reads, so any role that can connect may ask.
 */
export async function pendingMigrations(url: string): Promise<string[]> {
  const client = new pg.Client({ connectionString: url, connectionTimeoutMillis: 5_000 });
  await client.connect();
  try {
    const table = await client.query<{ present: boolean }>('SELECT to_regclass($1) IS NOT NULL AS present', [migrationsTable]);
    const recorded = table.rows[0]?.present ? (await client.query<{ name: string }>(`SELECT name FROM ${migrationsTable}`)).rows : [];
    const applied = new Set(recorded.map((row) => row.name));
    return readdirSync(migrationsDir)
      .map((file) => parse(file).name)
      .filter((name) => !applied.has(name))
      .sort();
  } finally {
    await client.end();
  }
}

/** Applies pending migrations in order, under node-pg-migrate's advisory lock, recording each in `pgmigrations`. */
export async function migrate(url: string, logger: Logger): Promise<string[]> {
  const applied = await runner({
    databaseUrl: url,
    dir: migrationsDir,
    direction: 'up',
    migrationsTable,
    checkOrder: true,
    log: (message) => logger.debug(message),
    logger: { debug: () => undefined, info: (m) => logger.debug(m), warn: (m) => logger.warn(m), error: (m) => logger.error(m) },
  });
  return applied.map((migration) => migration.name);
}

/** A column of the rows a batched statement works on: its SQL type and its value in each item. */
export interface RowColumn<T> {
  readonly type: string;
  readonly value: (item: T) => unknown;
}

/**
 * How many rows a batch padded with a filler has at least: more than the ten elements PostgreSQL assumes an array
 * parameter has when it plans a statement for any values, so that a plan for the batch's own values never looks the
 * cheaper (it is weighed against the average of the connection's earlier custom plans, made on tables perhaps smaller).
 */
export const paddedBatchLength = 16;

export interface BatchRowsOptions<T> {
  /** A position column (1, 2, ...) after the others: the unnest's WITH ORDINALITY. */
  readonly ordinality?: boolean;
  /**
   * An item that matches no row (key 0: ids start at 1), for a statement that reads, updates or writes only for items
   * that match existing rows: a batch shorter than paddedBatchLength is padded with it. Never for a statement that
   * writes a row for every item, matched or not.
   */
  readonly filler?: T;
  /** The number of the first parameter, for a statement with other parameters before these rows' (1 by default). */
  readonly firstParameter?: number;
}

/**
 * The rows of a prepared statement that works on a batch of items, as a FROM item (`AS alias (columns)` follows it)
 * and its parameters, which start at $1 (or `firstParameter`). A batch is one array parameter per column, unnested; a
 * single item is a one-row VALUES of scalar parameters, under a name of its own.
 *
 * PostgreSQL plans a prepared statement for its values five times, then keeps a plan made for any values (generic)
 * unless that looks dearer than planning each time. A generic plan assumes an array parameter has ten elements, so a
 * statement that mostly carries fewer items (one, or the handful that arrive together below saturation) would be
 * planned anew at every execution: planning was most of the backend's CPU for such statements (the status read's
 * messages-get, one read a call on analyzed tables of 50,000 messages: 0.33 ms of backend CPU planned each time,
 * 0.14 ms planned once). The one-row form, and a padded batch (`filler`), are planned once per connection.
 */
export function batchRows<T>(
  name: string,
  items: readonly T[],
  columns: readonly RowColumn<T>[],
  options: BatchRowsOptions<T> = {},
): { name: string; rows: string; values: unknown[] } {
  const first = options.firstParameter ?? 1;
  if (items.length === 1) {
    const item = items[0] as T;
    const scalars = columns.map((column, index) => `$${first + index}::${column.type}`);
    return {
      name: `${name}-one`,
      rows: `(VALUES (${[...scalars, ...(options.ordinality ? ['1::bigint'] : [])].join(', ')}))`,
      values: columns.map((column) => column.value(item)),
    };
  }
  const { filler } = options;
  const rows = filler !== undefined && items.length < paddedBatchLength ? [...items, ...Array<T>(paddedBatchLength - items.length).fill(filler)] : items;
  return {
    name,
    rows: `unnest(${columns.map((column, index) => `$${first + index}::${column.type}[]`).join(', ')})${options.ordinality ? ' WITH ORDINALITY' : ''}`,
    values: columns.map((column) => rows.map(column.value)),
  };
}

export { type AuditEntry, type AuditEvent, readAuditEvents, recordAudit } from './audit-log.ts';
