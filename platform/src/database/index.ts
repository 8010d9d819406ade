// PostgreSQL: pooled connections (pg, instrumented by OpenTelemetry), transactions, and the schema migrations.
import { fileURLToPath } from 'node:url';
import pg from 'pg';
import { runner } from 'node-pg-migrate';
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

/** Applies pending migrations in order, under node-pg-migrate's advisory lock, recording each in `pgmigrations`. */
export async function migrate(url: string, logger: Logger): Promise<string[]> {
  const applied = await runner({
    databaseUrl: url,
    dir: migrationsDir,
    direction: 'up',
    migrationsTable: 'pgmigrations',
    checkOrder: true,
    log: (message) => logger.debug(message),
    logger: { debug: () => undefined, info: (m) => logger.debug(m), warn: (m) => logger.warn(m), error: (m) => logger.error(m) },
  });
  return applied.map((migration) => migration.name);
}
