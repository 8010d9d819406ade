import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { after, before, test } from 'node:test';
import { withTransaction } from '@notify/platform/database';
import { type Harness, startHarness } from '../testing/harness.ts';
import { flatten, type PlanNode } from '../testing/query-plan.ts';
import { type PurgeDeps, RetentionPurge } from './purge.ts';
import { purgeBatchSql, purgedTables, purgeLockKey } from './retention-store.ts';

let h: Harness;
let templateId: number;
/** An organization with its own retention (2 days) beside the harness's, which keeps the default. */
let shortOrganizationId: number;

before(async () => {
  h = await startHarness();
  await h.admin.call('PutTemplate', {
    projectId: h.ids.projectId,
    slug: 'welcome',
    subject: 'Hi',
    html: '<p>Hi</p>',
    text: 'Hi',
    variablesSchemaJson: '',
    active: true,
  });
  templateId = (await h.pool.query<{ id: number }>("SELECT id::int FROM templates WHERE slug = 'welcome'")).rows[0]?.id ?? 0;
  const plan = await h.pool.query<{ plan_id: number }>('SELECT plan_id FROM organizations WHERE id = $1', [h.ids.organizationId]);
  const organization = await h.pool.query<{ id: number }>(
    "INSERT INTO organizations (name, plan_id, message_retention_hours) VALUES ('Short', $1, 48) RETURNING id::int",
    [plan.rows[0]?.plan_id],
  );
  shortOrganizationId = organization.rows[0]?.id ?? 0;
});

after(async () => {
  await h.close();
});

const day = 24;
const purgeDeps = (overrides: Partial<PurgeDeps> = {}): PurgeDeps => ({
  pool: h.pool,
  metrics: h.metrics,
  logger: h.logger,
  defaultRetentionHours: 30 * day,
  batchSize: 1_000,
  pauseMs: 0,
  ...overrides,
});

/**
 * A message of `organizationId` whose last change was `ageHours` ago, with a row in every table that references a
 * message: two events, an outbox row, an idempotency record, a webhook event with a delivery and an attempt, and the
 * suppression it caused.
 */
async function messageWithRows(organizationId: number, state: string, ageHours: number): Promise<number> {
  return withTransaction(h.pool, async (client) => {
    const inserted = await client.query<{ id: number }>(
      `INSERT INTO messages (project_id, organization_id, api_key_id, template_id, template_slug, template_version, recipient, data, state, celery_task_id, created_at, updated_at)
       VALUES ($1, $2, $3, $4, 'welcome', 1, $5, '{}', $6, gen_random_uuid(), now() - make_interval(hours => $7 + 1), now() - make_interval(hours => $7))
       RETURNING id::int`,
      [h.ids.projectId, organizationId, h.ids.apiKeyId, templateId, `${randomUUID()}@example.com`, state, ageHours],
    );
    const id = inserted.rows[0]?.id ?? 0;
    await client.query("INSERT INTO message_events (message_id, state, attempt, occurred_at) VALUES ($1, 'queued', 0, now()), ($1, $2, 1, now())", [id, state]);
    await client.query("INSERT INTO outbox (message_id, payload) VALUES ($1, '{}')", [id]);
    await client.query(
      "INSERT INTO idempotency_keys (project_id, idempotency_key, fingerprint, message_id, response, expires_at) VALUES ($1, $2, 'f', $3, '{}', now() + interval '1 day')",
      [h.ids.projectId, randomUUID(), id],
    );
    const endpoint = await client.query<{ id: number }>(
      "INSERT INTO webhook_endpoints (project_id, organization_id, url, event_types, secret) VALUES ($1, $2, 'https://hooks.example.com/', '{message.sent}', 'whsec_x') RETURNING id",
      [h.ids.projectId, organizationId],
    );
    const event = await client.query<{ id: number }>(
      "INSERT INTO webhook_events (project_id, message_id, type, sequence, payload) VALUES ($1, $2, 'message.sent', 1, '{}') RETURNING id",
      [h.ids.projectId, id],
    );
    await client.query('INSERT INTO webhook_deliveries (event_id, endpoint_id) VALUES ($1, $2)', [event.rows[0]?.id, endpoint.rows[0]?.id]);
    await client.query('INSERT INTO webhook_attempts (event_id, endpoint_id, attempt, latency_ms) VALUES ($1, $2, 1, 5)', [
      event.rows[0]?.id,
      endpoint.rows[0]?.id,
    ]);
    await client.query("INSERT INTO suppressions (project_id, address, reason, message_id) VALUES ($1, $2, 'hard_bounce', $3)", [
      h.ids.projectId,
      `${randomUUID()}@example.com`,
      id,
    ]);
    return id;
  });
}

/** How many rows each table holds for these messages (webhook deliveries and attempts through their events). */
async function rowsOf(ids: readonly number[]): Promise<Record<string, number>> {
  const { rows } = await h.pool.query<Record<string, number>>(
    `SELECT (SELECT count(*) FROM messages WHERE id = ANY($1))::int AS messages,
            (SELECT count(*) FROM message_events WHERE message_id = ANY($1))::int AS message_events,
            (SELECT count(*) FROM outbox WHERE message_id = ANY($1))::int AS outbox,
            (SELECT count(*) FROM idempotency_keys WHERE message_id = ANY($1))::int AS idempotency_keys,
            (SELECT count(*) FROM webhook_events WHERE message_id = ANY($1))::int AS webhook_events,
            (SELECT count(*) FROM webhook_deliveries d JOIN webhook_events w ON w.id = d.event_id WHERE w.message_id = ANY($1))::int AS webhook_deliveries,
            (SELECT count(*) FROM webhook_attempts a JOIN webhook_events w ON w.id = a.event_id WHERE w.message_id = ANY($1))::int AS webhook_attempts,
            (SELECT count(*) FROM suppressions WHERE message_id = ANY($1))::int AS suppressions`,
    [ids],
  );
  return rows[0] ?? {};
}

const purgedCounter = async (table: string): Promise<number> =>
  (await h.metrics.retentionPurgedRows.get()).values.find((value) => value.labels.table === table)?.value ?? 0;

test("final messages past their organization's retention go with every row that references them; young, non-final and overridden ones stay", async () => {
  const before = await purgedCounter('messages');
  const old = [];
  for (const state of ['sent', 'failed', 'canceled', 'bounced', 'complained']) old.push(await messageWithRows(h.ids.organizationId, state, 31 * day));
  // The short organization keeps 2 days: 3 days old is past it, 1 day old is not.
  const shortOld = await messageWithRows(shortOrganizationId, 'sent', 3 * day);
  const shortYoung = await messageWithRows(shortOrganizationId, 'sent', 1 * day);
  // 3 days old under the default 30 days: kept.
  const young = await messageWithRows(h.ids.organizationId, 'sent', 3 * day);
  // On their way, however old: never purged.
  const onTheirWay = [];
  for (const state of ['scheduled', 'queued', 'sending', 'deferred']) onTheirWay.push(await messageWithRows(h.ids.organizationId, state, 400 * day));

  const purged = await new RetentionPurge(purgeDeps()).purge('try');

  assert.deepEqual(purged, { messages: 6, message_events: 12, outbox: 6, idempotency_keys: 6, webhook_events: 6, webhook_deliveries: 6, webhook_attempts: 6 });
  assert.deepEqual(await rowsOf([...old, shortOld]), {
    messages: 0,
    message_events: 0,
    outbox: 0,
    idempotency_keys: 0,
    webhook_events: 0,
    webhook_deliveries: 0,
    webhook_attempts: 0,
    suppressions: 0,
  });
  const kept = [shortYoung, young, ...onTheirWay];
  const n = kept.length;
  assert.deepEqual(await rowsOf(kept), {
    messages: n,
    message_events: 2 * n,
    outbox: n,
    idempotency_keys: n,
    webhook_events: n,
    webhook_deliveries: n,
    webhook_attempts: n,
    suppressions: n,
  });
  // The suppressions the purged messages caused are kept, without their message.
  const orphaned = await h.pool.query<{ n: number }>("SELECT count(*)::int AS n FROM suppressions WHERE message_id IS NULL AND reason = 'hard_bounce'");
  assert.equal(orphaned.rows[0]?.n, 6);
  assert.equal((await purgedCounter('messages')) - before, 6);
  assert.deepEqual(await new RetentionPurge(purgeDeps()).purge('try'), {
    messages: 0,
    message_events: 0,
    outbox: 0,
    idempotency_keys: 0,
    webhook_events: 0,
    webhook_deliveries: 0,
    webhook_attempts: 0,
  });
});

test('a backlog larger than a batch is purged in batches, all of it in one pass', async () => {
  await h.pool.query(
    `INSERT INTO messages (project_id, organization_id, api_key_id, template_id, template_slug, template_version, recipient, data, state, celery_task_id, created_at, updated_at)
     SELECT $1, $2, $3, $4, 'welcome', 1, 'bulk@example.com', '{}', 'sent', gen_random_uuid(), now() - interval '40 days', now() - interval '40 days' - i * interval '1 second'
       FROM generate_series(1, 25) i`,
    [h.ids.projectId, h.ids.organizationId, h.ids.apiKeyId, templateId],
  );
  const purged = await new RetentionPurge(purgeDeps({ batchSize: 10, pauseMs: 1 })).purge('try');
  assert.equal(purged.messages, 25);
  const left = await h.pool.query<{ n: number }>("SELECT count(*)::int AS n FROM messages WHERE recipient = 'bulk@example.com'");
  assert.equal(left.rows[0]?.n, 0);
});

test("while another replica holds the purge lock, a periodic pass purges nothing and an operator's purge waits its turn", async () => {
  const id = await messageWithRows(h.ids.organizationId, 'sent', 31 * day);
  const holder = await h.pool.connect();
  try {
    await holder.query('BEGIN');
    await holder.query('SELECT pg_advisory_xact_lock($1)', [purgeLockKey]);
    assert.equal((await new RetentionPurge(purgeDeps()).purge('try')).messages, 0);
    const waiting = new RetentionPurge(purgeDeps()).purge('wait');
    const early = await Promise.race([waiting.then(() => 'done'), new Promise((resolve) => setTimeout(resolve, 300, 'waiting'))]);
    assert.equal(early, 'waiting');
    await holder.query('COMMIT');
    assert.equal((await waiting).messages, 1);
  } finally {
    holder.release();
  }
  assert.equal((await rowsOf([id])).messages, 0);
});

test("the leader reports each organization's oldest kept final message and retention, and the table sizes; a replica that met the lock reports none", async () => {
  await messageWithRows(h.ids.organizationId, 'sent', 10 * day);
  await messageWithRows(h.ids.organizationId, 'queued', 100 * day);
  const leader = new RetentionPurge(purgeDeps());
  await leader.purge('try');
  const ages = (await h.metrics.retentionOldestFinalAge.get()).values;
  const retentions = (await h.metrics.messageRetention.get()).values;
  const own = ages.find((value) => value.labels.organization_id === String(h.ids.organizationId))?.value ?? 0;
  // The oldest kept final one is 10 days old: the queued one, older still, is not final.
  assert.ok(own >= 10 * 86_400 && own < 10 * 86_400 + 600, String(own));
  assert.equal(retentions.find((value) => value.labels.organization_id === String(h.ids.organizationId))?.value, 30 * 86_400);
  assert.equal(retentions.find((value) => value.labels.organization_id === String(shortOrganizationId))?.value, 2 * 86_400);
  const sizes = (await h.metrics.tableSize.get()).values;
  assert.ok((sizes.find((value) => value.labels.table === 'messages')?.value ?? 0) > 0);

  const holder = await h.pool.connect();
  try {
    await holder.query('BEGIN');
    await holder.query('SELECT pg_advisory_xact_lock($1)', [purgeLockKey]);
    await leader.purge('try');
    await holder.query('COMMIT');
  } finally {
    holder.release();
  }
  assert.deepEqual((await h.metrics.retentionOldestFinalAge.get()).values, []);
  assert.deepEqual((await h.metrics.tableSize.get()).values, []);
});

test('every table that references messages is purged with them, or says why not', async () => {
  const { rows } = await h.pool.query<{ table: string; action: string }>(
    `SELECT c.conrelid::regclass::text AS table, c.confdeltype AS action FROM pg_constraint c
      WHERE c.contype = 'f' AND c.confrelid = 'messages'::regclass ORDER BY 1`,
  );
  const referencing = rows.map((row) => row.table);
  // scheduled_messages: a final message has left it (its foreign key cascades all the same); suppressions: kept, with
  // message_id set to NULL by its foreign key (`n`).
  assert.deepEqual(referencing.filter((table) => !(purgedTables as readonly string[]).includes(table)).sort(), ['scheduled_messages', 'suppressions']);
  assert.equal(rows.find((row) => row.table === 'suppressions')?.action, 'n');
});

test('EXPLAIN: a batch reads its candidates through messages_retention_idx, in order, and every table through an index, on 100,000 messages', async () => {
  await h.pool.query(
    `INSERT INTO messages (project_id, organization_id, api_key_id, template_id, template_slug, template_version, recipient, data, state, celery_task_id, created_at, updated_at)
     SELECT $1, $2, $3, $4, 'welcome', 1, 'user' || i || '@example.com', '{}',
            (CASE WHEN i % 10 = 0 THEN 'deferred' ELSE 'sent' END)::message_state, gen_random_uuid(),
            now() - i * interval '1 minute', now() - i * interval '1 minute'
       FROM generate_series(1, 100000) i`,
    [h.ids.projectId, h.ids.organizationId, h.ids.apiKeyId, templateId],
  );
  await h.pool.query('ANALYZE messages');
  const client = await h.pool.connect();
  try {
    await client.query('BEGIN');
    const { rows } = await client.query<{ 'QUERY PLAN': [{ Plan: PlanNode }] }>(`EXPLAIN (ANALYZE, FORMAT JSON) ${purgeBatchSql}`, [
      h.ids.organizationId,
      30 * day,
      1_000,
    ]);
    const nodes = flatten(rows[0]?.['QUERY PLAN'][0].Plan as PlanNode);
    const shown = JSON.stringify(nodes.map((node) => [node['Node Type'], node['Relation Name'], node['Index Name'], node['Actual Rows']]));
    const reads = nodes.filter((node) => node['Relation Name'] === 'messages' && node['Node Type'] !== 'ModifyTable');
    // Every table is read through an index: the candidates in order, then each table's rows by the candidates' ids.
    assert.ok(!nodes.some((node) => node['Node Type'] === 'Seq Scan'), shown);
    assert.deepEqual(
      reads.map((node) => [node['Node Type'], node['Index Name']]),
      [
        ['Index Scan', 'messages_retention_idx'],
        ['Index Scan', 'messages_pkey'],
      ],
      shown,
    );
    assert.ok(!nodes.some((node) => node['Node Type'] === 'Sort'), `reads in index order instead of sorting: ${shown}`);
    assert.ok((reads[0]?.['Actual Rows'] ?? Infinity) <= 1_000, `read ${reads[0]?.['Actual Rows']} candidates for a batch of 1,000`);
    assert.equal(reads[1]?.['Actual Rows'], 1_000, shown);
  } finally {
    await client.query('ROLLBACK');
    client.release();
  }
});
