// The statistics' counters against a real PostgreSQL: each applied transition counts once in its hour, for the project
// and for each of the message's tags, a redelivered event or a repeated report adds nothing, a late bounce takes the
// message back from `delivered`, the retention purge leaves the counters as they were, and a year by day is read
// through the primary key.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { checkStatsRange, type DeliveryEvent } from '@notify/proto';
import { applyDeliveryEvents } from '../events/event-store.ts';
import { applyRecipientReport, applyUnsubscribe } from '../reports/report-store.ts';
import { RetentionPurge } from '../retention/purge.ts';
import { type Harness, startHarness } from '../testing/harness.ts';
import { flatten, type PlanNode } from '../testing/query-plan.ts';
import { readStats, type StatsCounter, statsCounters, statsReadSql, statsReadValues } from './stats-store.ts';

let h: Harness;

before(async () => {
  h = await startHarness();
  await h.admin.call('PutTemplate', { projectId: h.ids.projectId, slug: 'welcome', subject: 'Hi', text: 'Hi', active: true });
});

after(async () => {
  await h.close();
});

let sends = 0;
/** A message with `tags`, each to its own address, so a bounce that suppresses one never refuses the next send. */
const tagged = async (tags: string[]): Promise<number> => {
  sends += 1;
  return (await h.dispatch.call('Send', h.sendRequest({ tags, to: `reader-${sends}@example.com` }))).messageId;
};

/** An instant of `day` (January 2025) at hour `hour`; each test keeps to its own day, so their counts never mix. */
const at = (day: number, hour: number, minute = 0): string => new Date(Date.UTC(2025, 0, day, hour, minute)).toISOString();

const event = (messageId: number, state: DeliveryEvent['state'], attempt: number, occurredAt: string): DeliveryEvent => ({
  messageId,
  state,
  attempt,
  occurredAt,
  ...(state === 'sending' ? {} : { smtpCode: state === 'sent' ? 250 : 451, smtpResponse: 'reply' }),
});

const apply = (events: DeliveryEvent[]) =>
  applyDeliveryEvents(
    h.pool,
    events.map((each) => ({ event: each })),
  );

/** The hour buckets of `day`, keeping only those with a count, as `{ '<hour>': counters }`. */
async function hoursOf(day: number, tag = '', projectId = h.ids.projectId): Promise<Record<string, Partial<Record<StatsCounter, number>>>> {
  const { range } = checkStatsRange({ from: at(day, 0).replace('.000Z', 'Z'), to: at(day + 1, 0).replace('.000Z', 'Z'), granularity: 'hour' });
  assert.ok(range);
  const series = await readStats(h.pool, { projectId, tag, range });
  for (const counter of statsCounters) assert.equal(series[counter].length, 24, 'every hour of the day, empty ones as zeros');
  return Object.fromEntries(
    Array.from({ length: 24 }, (_, hour) => {
      const counted = statsCounters.flatMap((counter) => (series[counter][hour] === 0 ? [] : [[counter, series[counter][hour]]]));
      return [String(hour).padStart(2, '0'), Object.fromEntries(counted)] as const;
    }).filter(([, counted]) => Object.keys(counted).length > 0),
  );
}

test('each applied transition counts once in its hour, for the project and each tag; a redelivered event adds nothing', async () => {
  const id = await tagged(['onboarding', 'eu']);
  await apply([event(id, 'sending', 1, at(1, 9)), event(id, 'deferred', 1, at(1, 9, 1))]);
  await apply([event(id, 'sending', 2, at(1, 10)), event(id, 'sent', 2, at(1, 10, 1))]);
  // JetStream redelivers what a crash left unacknowledged: the same events, already applied.
  const again = await apply([event(id, 'deferred', 1, at(1, 9, 1)), event(id, 'sent', 2, at(1, 10, 1))]);
  assert.deepEqual(
    again.map(({ outcome }) => outcome),
    ['duplicate', 'duplicate'],
  );
  const expected = { '09': { deferred: 1 }, '10': { sent: 1, delivered: 1 } };
  assert.deepEqual(await hoursOf(1), expected);
  assert.deepEqual(await hoursOf(1, 'onboarding'), expected);
  assert.deepEqual(await hoursOf(1, 'eu'), expected);
  assert.deepEqual(await hoursOf(1, 'other'), {});
  assert.deepEqual(await hoursOf(1, '', h.ids.otherProjectId), {}, "another project's counters are its own");
});

test('a failure counts once; an event after it is recorded without counting', async () => {
  const id = await tagged([]);
  await apply([event(id, 'sending', 1, at(2, 3)), { ...event(id, 'failed', 1, at(2, 3, 5)), smtpCode: 550 }]);
  // A late `sent` of the same attempt: the message is terminal, so it is recorded and moves (and counts) nothing.
  const late = await apply([event(id, 'sent', 1, at(2, 4))]);
  assert.deepEqual(
    late.map(({ outcome }) => outcome),
    ['recorded'],
  );
  assert.deepEqual(await hoursOf(2), { '03': { failed: 1 } });
});

test('bounces count hard or soft and take the message back from delivered; complaints and unsubscribes count once', async () => {
  const report = { detail: 'dsn', smtpCode: undefined } as const;
  const [hard, soft, complained] = [await tagged(['promo']), await tagged(['promo']), await tagged([])];
  for (const id of [hard, soft, complained]) await apply([event(id, 'sending', 1, at(3, 8)), event(id, 'sent', 1, at(3, 8, 2))]);
  assert.deepEqual(await hoursOf(3), { '08': { sent: 3, delivered: 3 } });

  const hardReport = { ...report, messageId: hard, kind: 'bounced', suppression: 'hard_bounce', receivedAt: at(3, 11) } as const;
  assert.equal((await applyRecipientReport(h.pool, h.deps.dataKey, hardReport)).found, true);
  await applyRecipientReport(h.pool, h.deps.dataKey, { ...report, messageId: soft, kind: 'bounced', suppression: undefined, receivedAt: at(3, 12) });
  await applyRecipientReport(h.pool, h.deps.dataKey, { ...report, messageId: complained, kind: 'complained', suppression: 'complaint', receivedAt: at(3, 13) });
  // bounce-svc reports again when it is unsure the first report landed: the message has moved, so nothing counts.
  const repeated = await applyRecipientReport(h.pool, h.deps.dataKey, hardReport);
  assert.equal(repeated.found && !repeated.early && repeated.changed, false);

  const claim = { projectId: h.ids.projectId, messageId: complained, address: 'unsubscriber@example.com', source: 'one_click' };
  assert.equal((await applyUnsubscribe(h.pool, h.deps.dataKey, claim)).changed, true);
  assert.equal((await applyUnsubscribe(h.pool, h.deps.dataKey, claim)).changed, false);

  const hours = await hoursOf(3);
  const unsubscribedNow = (
    await h.pool.query<{ n: string }>("SELECT sum(unsubscribed)::text AS n FROM message_stats WHERE project_id = $1 AND tag = ''", [h.ids.projectId])
  ).rows[0]?.n;
  assert.equal(unsubscribedNow, '1', 'the unsubscribe counted once, in the hour it was made');
  assert.deepEqual(hours, { '08': { sent: 3, delivered: 1 }, '11': { bounced_hard: 1 }, '12': { bounced_soft: 1 }, '13': { complained: 1 } });
  assert.deepEqual(await hoursOf(3, 'promo'), { '08': { sent: 2 }, '11': { bounced_hard: 1 }, '12': { bounced_soft: 1 } });
});

test('the retention purge deletes the messages and leaves their counters', async () => {
  const ids = [await tagged(['old']), await tagged(['old'])];
  for (const id of ids) await apply([event(id, 'sending', 1, at(4, 6)), event(id, 'sent', 1, at(4, 6, 30))]);
  const before = await hoursOf(4, 'old');
  assert.deepEqual(before, { '06': { sent: 2, delivered: 2 } });
  await h.pool.query("UPDATE messages SET updated_at = now() - interval '400 days' WHERE id = ANY($1)", [ids]);
  const purge = new RetentionPurge({ pool: h.pool, metrics: h.metrics, logger: h.logger, defaultRetentionHours: 24, batchSize: 1_000, pauseMs: 0 });
  await purge.purge('wait');
  assert.equal((await h.pool.query('SELECT 1 FROM messages WHERE id = ANY($1)', [ids])).rowCount, 0, 'the messages are purged');
  assert.deepEqual(await hoursOf(4, 'old'), before);
});

test('a year by day sums 8,760 hour rows per bucket and reads them through the primary key', async () => {
  // A year of hours for one tag, beside ten other series of the project, as a project with a few tags has them.
  await h.pool.query(
    `INSERT INTO message_stats (project_id, tag, hour, sent, delivered, failed)
     SELECT $1, tag, hour, 2, 2, 1 FROM unnest(ARRAY['yearly', 'a', 'b', 'c', 'd', 'e', 'f', 'g', 'h', 'i', 'j']) AS tag,
            generate_series(timestamptz '2023-01-01T00:00:00Z', timestamptz '2023-12-31T23:00:00Z', interval '1 hour') AS hour`,
    [h.ids.projectId],
  );
  await h.pool.query('ANALYZE message_stats');
  const { range } = checkStatsRange({ from: '2023-01-01', to: '2024-01-01', granularity: 'day' });
  assert.ok(range);
  const query = { projectId: h.ids.projectId, tag: 'yearly', range };
  const series = await readStats(h.pool, query);
  assert.equal(series.sent.length, 365);
  assert.ok(
    series.sent.every((sent) => sent === 48),
    'each day sums its 24 hours',
  );
  assert.ok(series.failed.every((failed) => failed === 24));
  assert.ok(series.complained.every((complained) => complained === 0));

  const explained = await h.pool.query<{ 'QUERY PLAN': [{ Plan: PlanNode }] }>(`EXPLAIN (ANALYZE, FORMAT JSON) ${statsReadSql}`, statsReadValues(query));
  const nodes = flatten(explained.rows[0]?.['QUERY PLAN'][0].Plan as PlanNode);
  // An index scan or a bitmap scan of the key: either way the key's range is all that is read, never the table.
  const index = nodes.find((node) => node['Index Name'] === 'message_stats_pkey');
  assert.ok(index, JSON.stringify(nodes.map((node) => node['Node Type'])));
  assert.equal(index['Actual Rows'], 8_760, 'only the series rows of the range are read');
  assert.match(index['Index Cond'] ?? '', /project_id.*tag.*hour/);
  assert.ok(!nodes.some((node) => node['Node Type'] === 'Seq Scan'));
  for (const node of nodes) assert.equal((node['Rows Removed by Filter'] ?? 0) + (node['Rows Removed by Index Recheck'] ?? 0), 0);
});
