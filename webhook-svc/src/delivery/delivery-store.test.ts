// The sender's statements against a real PostgreSQL: deliveries claimed and attempts recorded many to a statement, with
// the same outcome for each as when they were one to a statement.
import assert from 'node:assert/strict';
import { after, before, beforeEach, test } from 'node:test';
import { createPool, type Pool } from '@notify/platform/database';
import { createTestDatabase, type TestDatabase } from '@notify/test/harness/database.ts';
import { silentLogger } from '@notify/test/harness/logger.ts';
import { plannedAfterWarmUp } from '@notify/test/harness/prepared-plans.ts';
import { type AttemptRecord, batchedStore, claimDeliveries, type DeliveryKey, recordAttempts } from './delivery-store.ts';

const leaseMs = 60_000;
const fiveDaysMs = 5 * 86_400_000;
const settings = { disableAfterMs: fiveDaysMs, leaseMs };
let database: TestDatabase;
let pool: Pool;
let tenant: { organizationId: number; projectId: number; apiKeyId: number; templateId: number };

before(async () => {
  database = await createTestDatabase();
  pool = createPool(database.url, { max: 4, applicationName: 'webhook-store-test', logger: silentLogger('webhook-store-test') });
  const id = async (sql: string, values: unknown[]): Promise<number> => Number((await pool.query<{ id: string }>(`${sql} RETURNING id`, values)).rows[0]?.id);
  const planId = await id('INSERT INTO plans (name) VALUES ($1)', ['plan']);
  const organizationId = await id('INSERT INTO organizations (name, plan_id) VALUES ($1, $2)', ['Org', planId]);
  const projectId = await id('INSERT INTO projects (organization_id, name) VALUES ($1, $2)', [organizationId, 'main']);
  const apiKeyId = await id('INSERT INTO api_keys (project_id, name, prefix, secret_hash) VALUES ($1, $2, $3, $4)', [
    projectId,
    'key',
    'ntfy_test',
    Buffer.alloc(32),
  ]);
  const templateId = await id("INSERT INTO templates (project_id, slug, active, subject, html, text) VALUES ($1, 'welcome', true, 's', 'h', 't')", [projectId]);
  tenant = { organizationId, projectId, apiKeyId, templateId };
});

after(async () => {
  await pool?.end();
  await database?.drop();
});

beforeEach(async () => {
  await pool.query('TRUNCATE webhook_attempts, webhook_deliveries, webhook_events, webhook_endpoints, messages CASCADE');
});

async function endpoint(failingForMs?: number): Promise<number> {
  const found = await pool.query<{ id: string }>(
    `INSERT INTO webhook_endpoints (project_id, organization_id, url, event_types, secret, failing_since)
     VALUES ($1, $2, 'https://hooks.example.com/', '{message.sent}', 'whsec_AAAA', now() - $3 * interval '1 millisecond') RETURNING id`,
    [tenant.projectId, tenant.organizationId, failingForMs ?? null],
  );
  return Number(found.rows[0]?.id);
}

/** A pending delivery of a new event to `endpointId`. */
async function delivery(endpointId: number): Promise<DeliveryKey> {
  const message = await pool.query<{ id: string }>(
    `INSERT INTO messages (project_id, organization_id, api_key_id, template_id, template_slug, template_version, recipient, data, state, celery_task_id)
     VALUES ($1, $2, $3, $4, 'welcome', 1, 'to@example.com', '{}', 'sent', gen_random_uuid()) RETURNING id`,
    [tenant.projectId, tenant.organizationId, tenant.apiKeyId, tenant.templateId],
  );
  const event = await pool.query<{ id: string }>(
    `INSERT INTO webhook_events (project_id, message_id, type, sequence, payload) VALUES ($1, $2, 'message.sent', 1, '{"type": "message.sent"}') RETURNING id`,
    [tenant.projectId, message.rows[0]?.id],
  );
  const eventId = Number(event.rows[0]?.id);
  await pool.query('INSERT INTO webhook_deliveries (event_id, endpoint_id, next_attempt_at) VALUES ($1, $2, now())', [eventId, endpointId]);
  return { eventId, endpointId };
}

const attempt = (key: DeliveryKey, outcome: AttemptRecord['outcome'], statusCode: number | null, gone = false): AttemptRecord => ({
  ...key,
  attempt: 1,
  statusCode,
  latencyMs: 12,
  responseBody: statusCode === null ? null : '',
  error: statusCode === null ? 'connect ECONNREFUSED' : null,
  outcome,
  gone,
});

const endpointRow = async (id: number) =>
  (
    await pool.query<{ enabled: boolean; disabledReason: string | null; failing: boolean }>(
      'SELECT enabled, disabled_reason AS "disabledReason", failing_since IS NOT NULL AS failing FROM webhook_endpoints WHERE id = $1',
      [id],
    )
  ).rows[0];

test('one statement claims every due delivery named, and says for each of the others why not', async () => {
  const open = await endpoint();
  const [due, alsoDue, settled, later] = [await delivery(open), await delivery(open), await delivery(open), await delivery(open)];
  await pool.query("UPDATE webhook_deliveries SET state = 'succeeded' WHERE event_id = $1", [settled.eventId]);
  await pool.query("UPDATE webhook_deliveries SET next_attempt_at = now() + interval '30 seconds' WHERE event_id = $1", [later.eventId]);
  const disabled = await endpoint();
  const ofDisabled = await delivery(disabled);
  await pool.query("UPDATE webhook_endpoints SET enabled = false, disabled_reason = 'operator' WHERE id = $1", [disabled]);

  const claims = await claimDeliveries(pool, [due, settled, later, ofDisabled, alsoDue], leaseMs);
  assert.deepEqual(
    claims.map((claim) => claim.kind),
    ['claimed', 'settled', 'later', 'endpoint_disabled', 'claimed'],
  );
  const first = claims[0];
  assert.ok(first?.kind === 'claimed');
  assert.deepEqual(first.delivery, {
    attempts: 0,
    replayedAfter: 0,
    url: 'https://hooks.example.com/',
    secrets: ['whsec_AAAA'],
    body: '{"type": "message.sent"}',
  });
  const waiting = claims[2];
  assert.ok(waiting?.kind === 'later' && waiting.inMs > 25_000 && waiting.inMs <= 30_000);
  // Claimed means leased: named again, both now wait out the lease.
  const again = await claimDeliveries(pool, [due, alsoDue], leaseMs);
  assert.ok(again.every((claim) => claim.kind === 'later' && claim.inMs > leaseMs - 5_000));
});

test('a delivery named twice in one batch is claimed once: the second copy waits out the lease', async () => {
  const key = await delivery(await endpoint());
  const claims = await claimDeliveries(pool, [key, key], leaseMs);
  assert.equal(claims[0]?.kind, 'claimed');
  assert.ok(claims[1]?.kind === 'later' && claims[1].inMs > leaseMs - 5_000);
});

test('attempts recorded together: each delivery moves, each attempt is logged, and each endpoint changes as its attempts say', async () => {
  const healthy = await endpoint();
  const recovering = await endpoint(60_000);
  const gone = await endpoint();
  const failingLong = await endpoint(fiveDaysMs + 60_000);
  const keys = {
    healthy: await delivery(healthy),
    recoveringFailed: await delivery(recovering),
    recoveringSucceeded: await delivery(recovering),
    gone: await delivery(gone),
    failingLong: await delivery(failingLong),
    failingLongAgain: await delivery(failingLong),
  };
  const recorded = await recordAttempts(
    pool,
    [
      attempt(keys.healthy, { state: 'succeeded' }, 204),
      attempt(keys.recoveringFailed, { state: 'pending', retryInMs: 5_000 }, 503),
      attempt(keys.recoveringSucceeded, { state: 'succeeded' }, 200),
      attempt(keys.gone, { state: 'failed' }, 410, true),
      attempt(keys.failingLong, { state: 'pending', retryInMs: 5_000 }, null),
      attempt(keys.failingLongAgain, { state: 'pending', retryInMs: 5_000 }, 500),
    ],
    settings,
  );
  // The change of an endpoint is told once, with its first attempt.
  assert.deepEqual(
    recorded.map((record) => record.change),
    ['none', 'none', 'none', 'disabled_gone', 'disabled_failing', 'none'],
  );

  const deliveries = await pool.query<{ eventId: string; state: string; attempts: number; retryInS: number | null }>(
    `SELECT event_id AS "eventId", state, attempts, round(extract(epoch FROM next_attempt_at - now()))::int AS "retryInS" FROM webhook_deliveries ORDER BY event_id`,
  );
  assert.deepEqual(
    deliveries.rows.map((row) => [Number(row.eventId), row.state, row.attempts, row.retryInS]),
    [
      [keys.healthy.eventId, 'succeeded', 1, null],
      [keys.recoveringFailed.eventId, 'pending', 1, 5],
      [keys.recoveringSucceeded.eventId, 'succeeded', 1, null],
      [keys.gone.eventId, 'failed', 1, null],
      [keys.failingLong.eventId, 'pending', 1, 5],
      [keys.failingLongAgain.eventId, 'pending', 1, 5],
    ],
  );
  const logged = await pool.query<{ count: string }>('SELECT count(*) FROM webhook_attempts');
  assert.equal(Number(logged.rows[0]?.count), 6);

  assert.deepEqual(await endpointRow(healthy), { enabled: true, disabledReason: null, failing: false });
  assert.deepEqual(await endpointRow(recovering), { enabled: true, disabledReason: null, failing: false }, 'a success among its attempts ends the run');
  assert.deepEqual(await endpointRow(gone), { enabled: false, disabledReason: 'gone', failing: true });
  assert.deepEqual(await endpointRow(failingLong), { enabled: false, disabledReason: 'failing', failing: true });
});

test("a failure starts an endpoint's run of failures and a later success ends it; a success while healthy leaves its row alone", async () => {
  const id = await endpoint();
  const updatedAt = async () => (await pool.query<{ at: Date }>('SELECT updated_at AS at FROM webhook_endpoints WHERE id = $1', [id])).rows[0]?.at.getTime();
  const untouched = await updatedAt();
  assert.deepEqual(await recordAttempts(pool, [attempt(await delivery(id), { state: 'succeeded' }, 204)], settings), [{ change: 'none' }]);
  assert.equal(await updatedAt(), untouched, 'not written: nothing about it changed');
  assert.deepEqual(await recordAttempts(pool, [attempt(await delivery(id), { state: 'pending', retryInMs: 1_000 }, 502)], settings), [{ change: 'none' }]);
  assert.equal((await endpointRow(id))?.failing, true);
  assert.deepEqual(await recordAttempts(pool, [attempt(await delivery(id), { state: 'succeeded' }, 204)], settings), [{ change: 'none' }]);
  assert.deepEqual(await endpointRow(id), { enabled: true, disabledReason: null, failing: false });
});

test('records made at once share a statement, and one the database refuses fails alone', async () => {
  const id = await endpoint();
  const store = batchedStore(pool, { maxBatch: 64, leaseMs, disableAfterMs: fiveDaysMs });
  const [kept, purged] = [await delivery(id), await delivery(id)];
  // Its event purged while its request was out (retention): its attempt can no longer be recorded.
  await pool.query('DELETE FROM webhook_events WHERE id = $1', [purged.eventId]);
  const outcomes = await Promise.allSettled([
    store.record(attempt(kept, { state: 'succeeded' }, 204)),
    store.record(attempt(purged, { state: 'succeeded' }, 204)),
  ]);
  assert.deepEqual(outcomes[0], { status: 'fulfilled', value: { change: 'none' } });
  assert.equal(outcomes[1]?.status, 'rejected');
  const recorded = await pool.query<{ eventId: string; state: string }>(
    'SELECT d.event_id AS "eventId", d.state FROM webhook_deliveries d JOIN webhook_attempts a USING (event_id, endpoint_id)',
  );
  assert.deepEqual(
    recorded.rows.map((row) => [Number(row.eventId), row.state]),
    [[kept.eventId, 'succeeded']],
  );
});

test("a record claims its slot's next delivery in the same statement if its endpoint stays healthy; the others are left to claimDeliveries", async () => {
  const [healthy, failing, gone, copied] = [await endpoint(), await endpoint(), await endpoint(), await endpoint()];
  const keys = {
    healthy: await delivery(healthy),
    healthyNext: await delivery(healthy),
    failing: await delivery(failing),
    failingNext: await delivery(failing),
    gone: await delivery(gone),
    goneNext: await delivery(gone),
    copied: await delivery(copied),
  };
  const recorded = await recordAttempts(
    pool,
    [
      { ...attempt(keys.healthy, { state: 'succeeded' }, 204), next: keys.healthyNext },
      { ...attempt(keys.failing, { state: 'pending', retryInMs: 5_000 }, 503), next: keys.failingNext },
      { ...attempt(keys.gone, { state: 'failed' }, 410, true), next: keys.goneNext },
      // A second copy of the delivery being recorded, parked behind the first.
      { ...attempt(keys.copied, { state: 'succeeded' }, 204), next: keys.copied },
    ],
    settings,
  );
  assert.deepEqual(recorded, [
    { change: 'none', next: { attempts: 0, replayedAfter: 0, url: 'https://hooks.example.com/', secrets: ['whsec_AAAA'], body: '{"type": "message.sent"}' } },
    { change: 'none' },
    { change: 'disabled_gone' },
    { change: 'none' },
  ]);
  const claims = await claimDeliveries(pool, [keys.healthyNext, keys.failingNext, keys.goneNext, keys.copied], leaseMs);
  assert.ok(claims[0]?.kind === 'later' && claims[0].inMs > leaseMs - 5_000, 'claimed with the record: leased');
  assert.equal(claims[1]?.kind, 'claimed', 'a failing endpoint still enabled: claimed on its own');
  assert.equal(claims[2]?.kind, 'endpoint_disabled', 'disabled by the record it was named with');
  assert.equal(claims[3]?.kind, 'settled', 'the copy finds what its first copy became');
});

/** Entries on the leaf pages of each index of webhook_deliveries (pageinspect), by index name. */
async function indexEntries(): Promise<Record<string, number>> {
  const found = await pool.query<{ index: string; entries: number }>(
    `SELECT c.relname AS index,
            (SELECT count(*) FROM generate_series(1, pg_relation_size(c.oid) / current_setting('block_size')::int - 1) AS page,
                    LATERAL bt_page_items(c.relname::text, page::int) AS item
              WHERE (bt_page_stats(c.relname::text, page::int)).type = 'l')::int AS entries
       FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid
      WHERE i.indrelid = 'webhook_deliveries'::regclass`,
  );
  return Object.fromEntries(found.rows.map((row) => [row.index, row.entries]));
}

test('claiming a delivery and recording its attempt write no index entry: both update the row in place (HOT)', async () => {
  await pool.query('CREATE EXTENSION IF NOT EXISTS pageinspect');
  const id = await endpoint();
  const keys: DeliveryKey[] = [];
  for (let count = 0; count < 20; count += 1) keys.push(await delivery(id));
  const before = await indexEntries();
  assert.deepEqual(Object.values(before), [20, 20], 'the primary key and the endpoint index, one entry per delivery');

  const claims = await claimDeliveries(pool, keys, leaseMs);
  assert.ok(claims.every((claim) => claim.kind === 'claimed'));
  await recordAttempts(
    pool,
    keys.map((key, index) => attempt(key, index % 2 === 0 ? { state: 'succeeded' } : { state: 'pending', retryInMs: 5_000 }, index % 2 === 0 ? 204 : 503)),
    settings,
  );

  const moved = await pool.query<{ state: string; count: number }>(
    'SELECT state, count(*)::int AS count FROM webhook_deliveries WHERE attempts = 1 GROUP BY state ORDER BY state',
  );
  assert.deepEqual(moved.rows, [
    { state: 'pending', count: 10 },
    { state: 'succeeded', count: 10 },
  ]);
  assert.deepEqual(await indexEntries(), before, 'a new entry in an index would mean an update that was not HOT');
});

test('a delivery claimed and recorded alone is worked on as in a batch, by statements planned once per connection', async () => {
  // One connection, so pg_prepared_statements (per session) sees every execution.
  const alone = createPool(database.url, { max: 1, applicationName: 'webhook-store-test-alone', logger: silentLogger('webhook-store-test') });
  try {
    const id = await endpoint();
    // Tables the size of a system's and analyzed, as autovacuum keeps them: what the planner weighs its plans on.
    const message = (await pool.query<{ id: string }>('SELECT message_id AS id FROM webhook_events WHERE id = $1', [(await delivery(id)).eventId])).rows[0]?.id;
    await pool.query(
      `WITH e AS (INSERT INTO webhook_events (project_id, message_id, type, sequence, payload)
                  SELECT $1, $2, 'message.sent', 1 + n, '{"type": "message.sent"}' FROM generate_series(1, 5000) AS n RETURNING id)
       INSERT INTO webhook_deliveries (event_id, endpoint_id, state) SELECT id, $3, 'succeeded' FROM e`,
      [tenant.projectId, message, id],
    );
    await pool.query('ANALYZE webhook_events, webhook_deliveries, webhook_endpoints, webhook_attempts');
    const deliver = async (times: number): Promise<void> => {
      for (let count = 0; count < times; count += 1) {
        const [key, next] = [await delivery(id), await delivery(id)];
        const [claim] = await claimDeliveries(alone, [key], leaseMs);
        assert.equal(claim?.kind, 'claimed');
        const [again] = await claimDeliveries(alone, [key], leaseMs);
        assert.ok(again?.kind === 'later' && again.inMs > leaseMs - 5_000, 'claimed means leased');
        // Recorded with the slot's next delivery, which the same statement claims.
        const [recorded] = await recordAttempts(alone, [{ ...attempt(key, { state: 'succeeded' }, 204), next }], settings);
        assert.ok(recorded?.change === 'none' && recorded.next !== undefined);
        const [nextAgain] = await claimDeliveries(alone, [next], leaseMs);
        assert.ok(nextAgain?.kind === 'later' && nextAgain.inMs > leaseMs - 5_000, 'claimed with the record means leased');
        assert.deepEqual(await recordAttempts(alone, [attempt(next, { state: 'succeeded' }, 204)], settings), [{ change: 'none' }]);
        const [settled] = await claimDeliveries(alone, [key], leaseMs);
        assert.equal(settled?.kind, 'settled');
      }
    };
    assert.deepEqual(await plannedAfterWarmUp(alone, ['webhook-'], deliver), {
      'webhook-claim-one': { generic: 16, custom: 0 },
      'webhook-claim-why-not-one': { generic: 12, custom: 0 },
      'webhook-record-attempts-one': { generic: 4, custom: 0 },
      'webhook-record-attempts-one-claiming-one': { generic: 4, custom: 0 },
    });
  } finally {
    await alone.end();
  }
});
