// A database of the test's own on the test PostgreSQL (environment.ts), named after a run id, migrated to the current
// schema unless asked otherwise, and dropped afterwards: tests never touch data that is not theirs. Created and
// dropped the way the local launcher does it (@notify/cli/local/database).
import { randomBytes } from 'node:crypto';
import { migrate } from '@notify/platform/database';
import type { Logger } from '@notify/platform/logger';
import { databaseUrl, dropDatabase, ensureDatabase } from '@notify/cli/local/database';
import { testEnvironment } from './environment.ts';
import { silentLogger } from './logger.ts';

export interface TestDatabase {
  readonly name: string;
  /** postgres://…/<name> on the admin URL's server. */
  readonly url: string;
  /** Drops it, even while connections are open (WITH (FORCE)). */
  drop(): Promise<void>;
}

export interface TestDatabaseOptions {
  /** Server to create it on (default TEST_POSTGRES_URL); a private PostgreSQL's adminUrl, for one. */
  adminUrl?: string;
  /** Names it `notify_t_<runId>` (default: a fresh random id). */
  runId?: string;
  /** Migrated to the current schema (default); false leaves it empty, for a test of the migration itself. */
  migrated?: boolean;
  /** Hears the migration (default: silent). */
  logger?: Logger;
}

export function runId(): string {
  return randomBytes(4).toString('hex');
}

export async function createTestDatabase(options: TestDatabaseOptions = {}): Promise<TestDatabase> {
  const adminUrl = options.adminUrl ?? testEnvironment.postgresAdminUrl;
  const name = `notify_t_${options.runId ?? runId()}`;
  if (!(await ensureDatabase(adminUrl, name))) throw new Error(`database ${name} exists already: run ids must be unique`);
  const database: TestDatabase = { name, url: databaseUrl(adminUrl, name), drop: () => dropDatabase(adminUrl, name) };
  if (options.migrated === false) return database;
  try {
    await migrate(database.url, options.logger ?? silentLogger('test-migrate'));
  } catch (error) {
    await database.drop().catch(() => undefined);
    throw error;
  }
  return database;
}
