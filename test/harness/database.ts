// A database of the test's own on the test PostgreSQL (environment.ts), named after a run id, migrated to the current
// schema unless asked otherwise, and dropped afterwards: tests never touch data that is not theirs. Created and
// dropped the way the local launcher does it (@notify/cli/local/database).
//
// A migrated database is a copy of a template migrated once per server and set of migrations (`notify_schema_<hash>`,
// kept on the server like a build cache): copying takes under a second where running every migration takes one or
// two more, and the suites create over a hundred databases.
import { createHash, randomBytes } from 'node:crypto';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { databaseUrl, dropDatabase, ensureDatabase } from '@notify/cli/local/database';
import { migrate, migrationsDir } from '@notify/platform/database';
import type { Logger } from '@notify/platform/logger';
import pg from 'pg';
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
  const template = options.migrated === false ? undefined : await schemaTemplate(adminUrl, options.logger ?? silentLogger('test-migrate'));
  if (!(await ensureDatabase(adminUrl, name, template))) throw new Error(`database ${name} exists already: run ids must be unique`);
  return { name, url: databaseUrl(adminUrl, name), drop: () => dropDatabase(adminUrl, name) };
}

/** Changes whenever a migration is added or edited. */
function migrationsHash(): string {
  const hash = createHash('sha256');
  for (const file of readdirSync(migrationsDir).sort()) hash.update(file).update(readFileSync(join(migrationsDir, file)));
  return hash.digest('hex').slice(0, 16);
}

/** Key of the advisory lock that lets one process at a time build a template. */
const templateLockKey = 7_301_114;

/** The template of each server this process has asked for. */
const templates = new Map<string, Promise<string>>();

function schemaTemplate(adminUrl: string, logger: Logger): Promise<string> {
  let template = templates.get(adminUrl);
  if (!template) {
    template = ensureSchemaTemplate(adminUrl, `notify_schema_${migrationsHash()}`, logger);
    templates.set(adminUrl, template);
    // A failure is not kept: the next database asks again.
    template.catch(() => templates.delete(adminUrl));
  }
  return template;
}

/**
 * Builds the template unless the server has it: migrated under another name, then renamed and marked a template, so
 * a template that exists is always complete. Test processes running at once wait for the one that builds it.
 */
async function ensureSchemaTemplate(adminUrl: string, name: string, logger: Logger): Promise<string> {
  const client = new pg.Client({ connectionString: adminUrl, connectionTimeoutMillis: 10_000 });
  await client.connect();
  const exists = async (): Promise<boolean> =>
    ((await client.query('SELECT 1 FROM pg_database WHERE datname = $1 AND datistemplate', [name])).rowCount ?? 0) > 0;
  try {
    if (await exists()) return name;
    await client.query('SELECT pg_advisory_lock($1)', [templateLockKey]);
    if (await exists()) return name;
    const building = `${name}_building`;
    await dropDatabase(adminUrl, building);
    await ensureDatabase(adminUrl, building);
    await migrate(databaseUrl(adminUrl, building), logger);
    await client.query(`ALTER DATABASE ${building} RENAME TO ${name}`);
    await client.query(`ALTER DATABASE ${name} IS_TEMPLATE true`);
    return name;
  } finally {
    // Ending the session releases the lock too.
    await client.end();
  }
}
