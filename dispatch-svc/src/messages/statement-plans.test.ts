// A send's statements that lock or count per key, carrying the one key a send has when sends do not arrive together:
// PostgreSQL plans each once per connection, not at every send (platform batchRows).
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { after, before, test } from 'node:test';
import { plannedSince, preparedPlans } from '@notify/test/harness/prepared-plans.ts';
import { tryLockIdempotencyKeys } from '../idempotency/idempotency-store.ts';
import { startHarness, type Harness } from '../testing/harness.ts';
import { grantUsage } from '../usage/usage-store.ts';

let h: Harness;

before(async () => {
  h = await startHarness();
});

after(() => h.close());

test('the idempotency lock and the usage grant of a send alone are planned once per connection', async () => {
  // One connection, so pg_prepared_statements (per session) sees every execution.
  const [organizationId, projectId] = [h.ids.organizationId, h.ids.projectId];
  const alone = await h.pool.connect();
  const sendAlone = async (times: number): Promise<void> => {
    for (let count = 0; count < times; count += 1) {
      await alone.query('BEGIN');
      const [lock] = await tryLockIdempotencyKeys(alone, [{ projectId, idempotencyKey: randomUUID() }]);
      assert.deepEqual(lock, { locked: true });
      const grants = await grantUsage(alone, [{ organizationId, wanted: 1, monthlyQuota: 1_000_000 }]);
      assert.equal(grants.get(organizationId)?.granted, 1);
      await alone.query('COMMIT');
    }
  };
  try {
    // PostgreSQL plans a statement for its values five times before it weighs the generic plan; after that, an unnest
    // of array parameters (assumed ten rows long) would be planned anew at every send.
    await sendAlone(6);
    const before = { ...(await preparedPlans(alone, 'idempotency-')), ...(await preparedPlans(alone, 'usage-')) };
    await sendAlone(4);
    const after = { ...(await preparedPlans(alone, 'idempotency-')), ...(await preparedPlans(alone, 'usage-')) };
    assert.deepEqual(plannedSince(before, after), {
      'idempotency-lock-many-one': { generic: 4, custom: 0 },
      'usage-grant-one': { generic: 4, custom: 0 },
    });
  } finally {
    alone.release();
  }
});
