// The migration command as the chart runs it: the Job applies the schema; a service's init container (--wait) changes
// nothing and ends only once every migration of this release is recorded.
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { connect, createServer } from 'node:net';
import { after, before, test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { createTestDatabase, type TestDatabase } from '@notify/test/harness/database.ts';
import { freePort } from '@notify/test/harness/free-port.ts';
import { pendingMigrations } from './index.ts';

const cli = fileURLToPath(new URL('./migrate-cli.ts', import.meta.url));
let database: TestDatabase;

before(async () => {
  database = await createTestDatabase({ migrated: false });
});

after(() => database?.drop());

function start(args: readonly string[], databaseUrl = database.url) {
  const child = spawn(process.execPath, [cli, ...args], {
    env: { ...process.env, DATABASE_URL: databaseUrl, LOG_LEVEL: 'info' },
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  let output = '';
  child.stdout.on('data', (chunk: Buffer) => (output += chunk.toString()));
  return { child, output: () => output, exited: once(child, 'exit') as Promise<[number | null]> };
}

test('--wait writes nothing and waits while migrations are pending, then ends once the Job has applied them', async () => {
  const all = await pendingMigrations(database.url);
  assert.ok(all.length > 10, `pending on an empty database: ${all.join(', ')}`);

  const waiting = start(['--wait']);
  // Two of its polls, at least: it is still waiting, and the database is still empty.
  await new Promise((resolve) => setTimeout(resolve, 3_000));
  assert.equal(waiting.child.exitCode, null, waiting.output());
  assert.match(waiting.output(), /waiting for the migration/);
  assert.deepEqual(await pendingMigrations(database.url), all);

  const [code] = await start([]).exited;
  assert.equal(code, 0);
  assert.deepEqual(await pendingMigrations(database.url), []);
  const [waited] = await waiting.exited;
  assert.equal(waited, 0);
  assert.match(waiting.output(), /schema up to date/);
});

test('the migration waits for a database that refuses connections at first, and fails at once when the database says no', async () => {
  const fresh = await createTestDatabase({ migrated: false });
  try {
    // A port nothing listens on yet: refused, as a dev release's PostgreSQL is while it starts.
    const port = await freePort();
    const target = new URL(fresh.url);
    const url = new URL(fresh.url);
    url.port = String(port);
    const migrating = start([], url.toString());
    await new Promise((resolve) => setTimeout(resolve, 2_500));
    assert.equal(migrating.child.exitCode, null, migrating.output());
    const proxy = createServer((client) => {
      const upstream = connect({ host: target.hostname, port: Number(target.port || 5432) });
      client.pipe(upstream).pipe(client);
      client.once('error', () => upstream.destroy());
      upstream.once('error', () => client.destroy());
    }).listen(port, '127.0.0.1');
    try {
      const [code] = await migrating.exited;
      assert.equal(code, 0, migrating.output());
      assert.match(migrating.output(), /waiting for the database/);
      assert.deepEqual(await pendingMigrations(fresh.url), []);
    } finally {
      proxy.close();
    }

    const wrong = new URL(fresh.url);
    wrong.pathname = '/notify_no_such_database';
    const started = Date.now();
    const [failed] = await start([], wrong.toString()).exited;
    assert.equal(failed, 1);
    assert.ok(Date.now() - started < 10_000, 'not retried: the database is there and said no');
  } finally {
    await fresh.drop();
  }
});
