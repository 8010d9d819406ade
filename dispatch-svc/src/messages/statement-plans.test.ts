// A send's statements that lock, count or delete per key, carrying the one key a send has when sends do not arrive together:
// PostgreSQL plans each once per connection, not at every send (platform batchRows).
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { after, before, test } from 'node:test';
import { plannedAfterWarmUp } from '@notify/test/harness/prepared-plans.ts';
import { tryLockIdempotencyKeys } from '../idempotency/idempotency-store.ts';
import { deleteOutboxRows } from '../outbox/outbox-store.ts';
import { type Harness, startHarness } from '../testing/harness.ts';
import { grantUsage } from '../usage/usage-store.ts';

let h: Harness;

before(async () => {
  h = await startHarness();
  await h.admin.call('PutTemplate', { projectId: h.ids.projectId, slug: 'welcome', subject: 'Hi', text: 'Hi', active: true });
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
    assert.deepEqual(await plannedAfterWarmUp(alone, ['idempotency-', 'usage-'], sendAlone), {
      'idempotency-lock-many-one': { generic: 4, custom: 0 },
      'usage-grant-one': { generic: 4, custom: 0 },
    });
  } finally {
    alone.release();
  }
});

test('the outbox rows of a send alone, or of a few sends together, are deleted by a statement planned once per connection', async () => {
  const messageIds = [await h.acceptMessage(), await h.acceptMessage(), await h.acceptMessage(), await h.acceptMessage()];
  await h.outboxEmptied();
  const alone = await h.pool.connect();
  const confirmRounds = async (rounds: number): Promise<void> => {
    for (let round = 0; round < rounds; round += 1) {
      // The rows a send writes in its transaction, deleted once JetStream confirmed their jobs.
      await alone.query(`INSERT INTO outbox (message_id, payload) SELECT id, '{}' FROM unnest($1::bigint[]) AS id`, [messageIds]);
      await deleteOutboxRows(alone, messageIds.slice(0, 1));
      await deleteOutboxRows(alone, messageIds.slice(1));
      const left = await alone.query('SELECT message_id FROM outbox WHERE message_id = ANY ($1::bigint[])', [messageIds]);
      assert.deepEqual(left.rows, []);
    }
  };
  try {
    assert.deepEqual(await plannedAfterWarmUp(alone, ['outbox-delete-many'], confirmRounds), {
      'outbox-delete-many': { generic: 4, custom: 0 },
      'outbox-delete-many-one': { generic: 4, custom: 0 },
    });
  } finally {
    alone.release();
  }
});
