import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { status } from '@grpc/grpc-js';
import type { dispatch } from '@notify/proto';
import { assertRefused } from '@notify/test/harness/refusal.ts';
import { type Harness, startHarness } from '../testing/harness.ts';
import { flatten, type PlanNode } from '../testing/query-plan.ts';
import { decodeCursor, encodeCursor, listQuery, pageStatement } from './message-list.ts';

let h: Harness;
let scope: { projectId: number; organizationId: number };
const ids: number[] = [];

before(async () => {
  h = await startHarness();
  scope = { projectId: h.ids.projectId, organizationId: h.ids.organizationId };
  await h.admin.call('PutTemplate', { projectId: h.ids.projectId, slug: 'welcome', subject: 'Hi', text: 'Hi', active: true });
  for (let index = 0; index < 5; index += 1) {
    const response = await h.dispatch.call('Send', { ...scope, apiKeyId: h.ids.apiKeyId, template: 'welcome', to: `User${index}@Example.com`, dataJson: '{}' });
    ids.push(response.messageId);
  }
});

after(() => h.close());

const search = (request: dispatch.SearchProjectMessagesRequest) => h.dispatch.call('SearchProjectMessages', { ...scope, ...request });

test('messages are listed newest first, a page at a time, behind an opaque cursor', async () => {
  const newestFirst = [...ids].reverse();
  const first = await search({ limit: 2 });
  assert.deepEqual(
    first.messages.map((message) => message.id),
    newestFirst.slice(0, 2),
  );
  assert.doesNotMatch(first.nextCursor, /^\d+$/, 'the cursor is not a bare id');
  const second = await search({ limit: 2, cursor: first.nextCursor });
  assert.deepEqual(
    second.messages.map((message) => message.id),
    newestFirst.slice(2, 4),
  );
  const last = await search({ limit: 2, cursor: second.nextCursor });
  assert.deepEqual(
    last.messages.map((message) => message.id),
    newestFirst.slice(4),
  );
  assert.equal(last.nextCursor, '', 'no cursor after the last page');
  assert.deepEqual(first.messages[0]?.events, [], 'listings leave events out');
});

test('filters narrow the listing; the recipient compares case-insensitively', async () => {
  assert.deepEqual(
    (await search({ to: 'user3@example.com' })).messages.map((message) => message.id),
    [ids[3]],
  );
  assert.equal((await search({ state: 'queued', template: 'welcome' })).messages.length, 5);
  assert.equal((await search({ template: 'other' })).messages.length, 0);
  assert.equal((await search({ createdBefore: '2000-01-01T00:00:00Z' })).messages.length, 0);
  assert.equal((await search({ createdAfter: '2000-01-01T00:00:00Z' })).messages.length, 5);
});

test("another project's or organization's listing is empty, never this one's", async () => {
  assert.deepEqual((await search({ projectId: h.ids.otherProjectId })).messages, []);
  assert.deepEqual((await search({ organizationId: h.ids.organizationId + 1_000 })).messages, []);
});

test('a bad filter, cursor or limit is INVALID_ARGUMENT naming every field at fault', async () => {
  const error = await assertRefused(
    search({ state: 'delivered', createdAfter: 'yesterday', cursor: String(ids[0]), limit: 101 }),
    status.INVALID_ARGUMENT,
    'invalid_argument',
  );
  assert.deepEqual(
    error.fields.map((fault) => fault.split(':')[0]),
    ['status', 'created_after', 'cursor', 'limit'],
  );
});

test('a cursor round-trips exactly, microseconds included, and anything else is refused', () => {
  const cursor = { createdMicros: 1_795_000_000_123_456n, id: 42 };
  assert.deepEqual(decodeCursor(encodeCursor(cursor)), cursor);
  for (const text of ['', '42', 'djEuMS4w', Buffer.from('v1.1.1 OR 1=1').toString('base64url'), 'x'.repeat(200)])
    assert.equal(decodeCursor(text), undefined, text);
});

test('EXPLAIN: each page is read through an index, in order, on a project of 100,000 messages', async () => {
  const bulk = await h.admin.call('PutTemplate', { projectId: h.ids.otherProjectId, slug: 'bulk', subject: 'Bulk', text: 'x', active: true });
  await h.pool.query(
    `INSERT INTO messages (project_id, organization_id, api_key_id, template_id, template_slug, template_version, recipient, data, state,
                           celery_task_id, created_at, updated_at)
     SELECT $1, $2, $3, $4, CASE WHEN i % 10 = 0 THEN 'other' ELSE 'bulk' END, 1, 'user' || (i % 2000) || '@example.com', '{}',
            (CASE WHEN i % 25 = 0 THEN 'failed' ELSE 'sent' END)::message_state, gen_random_uuid(),
            now() - i * interval '1 second', now() - i * interval '1 second'
       FROM generate_series(1, 100000) i`,
    [h.ids.otherProjectId, h.ids.organizationId, h.ids.apiKeyId, bulk.id],
  );
  // Tags as integrators use them: a campaign on half the messages, a rare one on 1 in 1,000, none on the rest.
  await h.pool.query(
    `UPDATE messages SET tags = CASE WHEN id % 1000 = 0 THEN ARRAY['rare', 'campaign'] WHEN id % 2 = 0 THEN ARRAY['campaign'] END
      WHERE project_id = $1 AND (id % 2 = 0)`,
    [h.ids.otherProjectId],
  );
  await h.pool.query('ANALYZE messages');
  const base = {
    projectId: h.ids.otherProjectId,
    organizationId: h.ids.organizationId,
    state: '',
    template: '',
    to: '',
    createdAfter: '',
    createdBefore: '',
    limit: 50,
    cursor: '',
    tag: '',
  };
  const middle = await search({ projectId: h.ids.otherProjectId, limit: 100 });
  const requests: Partial<dispatch.SearchProjectMessagesRequest__Output>[] = [
    {},
    { state: 'failed' },
    { template: 'other' },
    { to: 'User7@example.com' },
    { createdAfter: new Date(Date.now() - 20 * 3_600_000).toISOString(), createdBefore: new Date(Date.now() - 10 * 3_600_000).toISOString() },
    { cursor: middle.nextCursor },
  ];
  for (const filters of requests) {
    const statement = pageStatement(listQuery({ ...base, ...filters }));
    const { rows } = await h.pool.query<{ 'QUERY PLAN': [{ Plan: PlanNode }] }>(`EXPLAIN (ANALYZE, FORMAT JSON) ${statement.text}`, statement.values);
    const plan = rows[0]?.['QUERY PLAN'][0].Plan;
    assert.ok(plan);
    const nodes = flatten(plan);
    const described = JSON.stringify(filters);
    const scan = nodes.find((node) => node['Relation Name'] === 'messages');
    assert.ok(!nodes.some((node) => node['Node Type'].includes('Sort')), `${described}: sorts instead of reading in index order`);
    assert.equal(scan?.['Node Type'], 'Index Scan', `${described}: reads messages through an index`);
    const read = (scan?.['Actual Rows'] ?? Infinity) + (scan?.['Rows Removed by Filter'] ?? 0);
    assert.ok(read <= statement.limit + 1, `${described}: read ${read} rows for a page of ${statement.limit}`);
    if (process.env.SHOW_EXPLAIN) console.log(described, scan?.['Index Name'], scan?.['Index Cond'], `rows read ${read}`, `${plan['Actual Total Time']} ms`);
  }
  // ?tag=: a rare tag is found through the GIN index on `<project>:<tag>` (only its own messages are read, then the
  // page is taken from them); a tag on half the project is read in order through the project's index, filtered.
  for (const [tag, index, most] of [
    ['rare', 'messages_tag_keys_idx', 100 + 1],
    ['campaign', 'messages_project_created_idx', 2 * (50 + 1)],
  ] as const) {
    const statement = pageStatement(listQuery({ ...base, tag }));
    const { rows } = await h.pool.query<{ 'QUERY PLAN': [{ Plan: PlanNode }] }>(`EXPLAIN (ANALYZE, FORMAT JSON) ${statement.text}`, statement.values);
    const plan = rows[0]?.['QUERY PLAN'][0].Plan;
    assert.ok(plan);
    const nodes = flatten(plan);
    const indexes = nodes.map((node) => node['Index Name']).filter(Boolean);
    assert.ok(indexes.includes(index), `tag ${tag}: read through ${index}, not ${indexes.join(', ')}`);
    assert.ok(!nodes.some((node) => node['Node Type'] === 'Seq Scan'), `tag ${tag}: no sequential scan`);
    const read = Math.max(
      ...nodes.map((node) => (node['Actual Rows'] ?? 0) + (node['Rows Removed by Filter'] ?? 0) + (node['Rows Removed by Index Recheck'] ?? 0)),
    );
    assert.ok(read <= most, `tag ${tag}: read ${read} rows for a page of ${statement.limit}`);
    if (process.env.SHOW_EXPLAIN) console.log(`tag=${tag}`, indexes.join(', '), `rows read ${read}`, `${plan['Actual Total Time']} ms`);
  }
});
