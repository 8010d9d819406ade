// The launcher's database: created on first start (CREATE DATABASE cannot run inside the migration tool's transaction).
import pg from 'pg';

const identifier = /^[a-z_][a-z0-9_]{0,62}$/;

/** The URL of database `name` on the server `adminUrl` points to. */
export function databaseUrl(adminUrl: string, name: string): string {
  const url = new URL(adminUrl);
  url.pathname = `/${name}`;
  return url.toString();
}

/** Creates database `name` unless it exists, as a copy of `template` when given; resolves true when it created it. */
export async function ensureDatabase(adminUrl: string, name: string, template?: string): Promise<boolean> {
  for (const each of [name, template ?? name]) {
    if (!identifier.test(each)) throw new Error(`database name must be a lower-case SQL identifier, got '${each}'`);
  }
  const client = new pg.Client({ connectionString: adminUrl, connectionTimeoutMillis: 5_000 });
  await client.connect();
  try {
    const existing = await client.query('SELECT 1 FROM pg_database WHERE datname = $1', [name]);
    if (existing.rowCount) return false;
    await client.query(template === undefined ? `CREATE DATABASE ${name}` : `CREATE DATABASE ${name} TEMPLATE ${template}`);
    return true;
  } catch (error) {
    // Two launchers racing: the other one created it first.
    if ((error as { code?: string }).code === '42P04') return false;
    throw error;
  } finally {
    await client.end();
  }
}

/** Drops database `name` (tests only ever drop the ones they created). */
export async function dropDatabase(adminUrl: string, name: string): Promise<void> {
  if (!identifier.test(name)) throw new Error(`database name must be a lower-case SQL identifier, got '${name}'`);
  const client = new pg.Client({ connectionString: adminUrl, connectionTimeoutMillis: 5_000 });
  await client.connect();
  try {
    await client.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
  } finally {
    await client.end();
  }
}
