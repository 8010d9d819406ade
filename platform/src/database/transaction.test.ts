// withTransaction when the database ends the connection of a checked-out client (a restart terminates every backend):
// the transaction fails with the connection's error, the process lives on, and the pool hands out a working client next.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { testEnvironment } from '@notify/test/harness/environment.ts';
import { silentLogger } from '@notify/test/harness/logger.ts';
import { createPool, type Pool, withTransaction } from './index.ts';

const url = testEnvironment.postgresAdminUrl;
const logger = silentLogger('transaction-test');
let pool: Pool;
let admin: Pool;

before(() => {
  pool = createPool(url, { max: 1, applicationName: 'notify-transaction-test', logger });
  admin = createPool(url, { max: 1, applicationName: 'notify-transaction-test-admin', logger });
});

after(async () => {
  await Promise.all([pool?.end(), admin?.end()]);
});

const backendPid = async (client: { query: Pool['query'] }): Promise<number> =>
  (await client.query<{ pid: number }>('SELECT pg_backend_pid() AS pid')).rows[0]?.pid ?? 0;

test('a connection terminated between two statements fails the transaction instead of crashing the process', async () => {
  let terminated = 0;
  await assert.rejects(
    withTransaction(pool, async (client) => {
      terminated = await backendPid(client);
      await admin.query('SELECT pg_terminate_backend($1)', [terminated]);
      // Let the termination notice arrive while no statement is running: pg emits it as an 'error' event.
      await new Promise((resolve) => setTimeout(resolve, 200));
      await client.query('SELECT 1');
    }),
    /terminat/i,
  );
  assert.ok(terminated > 0);
  const next = await withTransaction(pool, (client) => backendPid(client));
  assert.ok(next > 0 && next !== terminated, 'the broken client was destroyed, not pooled again');
});

test('work that throws is rolled back and the client stays pooled', async () => {
  const first = await withTransaction(pool, (client) => backendPid(client));
  await assert.rejects(
    withTransaction(pool, async (client) => {
      await client.query('CREATE TEMP TABLE rolled_back (id int)');
      throw new Error('work failed');
    }),
    /work failed/,
  );
  const { rows } = await pool.query<{ present: boolean }>("SELECT to_regclass('pg_temp.rolled_back') IS NOT NULL AS present");
  assert.equal(rows[0]?.present, false);
  assert.equal(await withTransaction(pool, (client) => backendPid(client)), first);
});
