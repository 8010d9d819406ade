// A project's delivery statistics (docs/contract.md, "Statistics"): counters per UTC hour in message_stats, added to in
// the transaction that applies each state change (events/event-store.ts, reports/report-store.ts), so a change is
// counted exactly when it commits and a redelivered event, which moves nothing, adds nothing. Read back by summing hour
// rows through the primary key, which no retention purge touches.
import { batchRows, type Pool, type PoolClient, type RowColumn } from '@notify/platform/database';
import { type StatsRange, statsBucketMs } from '@notify/proto';

export const statsCounters = ['sent', 'delivered', 'deferred', 'bounced_hard', 'bounced_soft', 'complained', 'unsubscribed', 'failed'] as const;
export type StatsCounter = (typeof statsCounters)[number];

/** One change to count: `delta` on `counter` in the hour of `at`, for the project's total and each tag of the message. */
export interface StatsChange {
  readonly projectId: number;
  /** Whose tags count too; 0 for none (an unsubscribe from a message purged since counts in the total only). */
  readonly messageId: number;
  readonly counter: StatsCounter;
  readonly delta: number;
  /** RFC 3339. */
  readonly at: string;
}

const changeColumns: readonly RowColumn<StatsChange>[] = [
  { type: 'bigint', value: (change) => change.projectId },
  { type: 'bigint', value: (change) => change.messageId },
  { type: 'text', value: (change) => change.counter },
  { type: 'integer', value: (change) => change.delta },
  { type: 'timestamptz', value: (change) => change.at },
];

/** Pads a short batch (platform batchRows): the statement counts nothing for project 0, which no project is. */
const noChange: StatsChange = { projectId: 0, messageId: 0, counter: 'sent', delta: 0, at: new Date(0).toISOString() };

const sums = statsCounters.map((counter) => `coalesce(sum(e.delta) FILTER (WHERE e.counter = '${counter}'), 0)`).join(', ');
const additions = statsCounters.map((counter) => `${counter} = s.${counter} + excluded.${counter}`).join(', ');

/**
 * Adds `changes` to their hours' rows in one statement, the caller's transaction's: summed per (project, tag, hour)
 * first, since one statement cannot update a row twice, and written in key order, so two transactions counting the
 * same rows wait for each other instead of deadlocking. A message's tags are read from its row, which the caller holds
 * locked; one without a row (purged) counts in the total only.
 */
export async function countStats(client: PoolClient, changes: readonly StatsChange[]): Promise<void> {
  if (changes.length === 0) return;
  const rows = batchRows('stats-count', changes, changeColumns, { filler: noChange });
  await client.query({
    name: rows.name,
    text: `INSERT INTO message_stats AS s (project_id, tag, hour, ${statsCounters.join(', ')})
           SELECT e.project_id, t.tag, date_bin('1 hour', e.at, timestamptz 'epoch'), ${sums}
             FROM ${rows.rows} AS e (project_id, message_id, counter, delta, at)
             LEFT JOIN messages m ON m.id = e.message_id AND m.project_id = e.project_id
            CROSS JOIN LATERAL unnest(array_prepend('', coalesce(m.tags, '{}'))) AS t (tag)
            WHERE e.project_id > 0
            GROUP BY 1, 2, 3
            ORDER BY 1, 2, 3
           ON CONFLICT (project_id, tag, hour) DO UPDATE SET ${additions}`,
    values: rows.values,
  });
}

/**
 * When the acceptance a bounce takes back from `delivered` was counted: the `sent` event of the attempt that delivered
 * the message, if its hour has counted acceptances (a message accepted before statistics were kept has none to take
 * back, and its hour would otherwise go below zero).
 */
export async function countedSentAt(client: PoolClient, message: { id: number; projectId: number; stateAttempt: number }): Promise<string | undefined> {
  const found = await client.query<{ at: Date }>({
    name: 'stats-counted-sent-at',
    text: `SELECT e.occurred_at AS at FROM message_events e
            WHERE e.message_id = $1 AND e.attempt = $2 AND e.state = 'sent'
              AND EXISTS (SELECT 1 FROM message_stats s WHERE s.project_id = $3 AND s.tag = ''
                             AND s.hour = date_bin('1 hour', e.occurred_at, timestamptz 'epoch') AND s.sent > 0)`,
    values: [message.id, message.stateAttempt, message.projectId],
  });
  return found.rows[0]?.at.toISOString();
}

/** A range's counters: one list per counter, one number per bucket, the buckets from the range's start in order. */
export type StatsSeries = Record<StatsCounter, number[]>;

/**
 * The read of readStats: a series' hour rows of a range, in key order through message_stats_pkey, summed per bucket
 * (integers into bigints), each bucket named by its index from the range's start.
 */
export const statsReadSql = `SELECT (extract(epoch FROM start - $3::timestamptz) / $5)::integer AS bucket, ${statsCounters.join(', ')}
  FROM (SELECT date_bin($5 * interval '1 second', hour, $3::timestamptz) AS start, ${statsCounters.map((counter) => `sum(${counter}) AS ${counter}`).join(', ')}
          FROM message_stats WHERE project_id = $1 AND tag = $2 AND hour >= $3 AND hour < $4
         GROUP BY 1) AS buckets`;

export type StatsQuery = { projectId: number; tag: string; range: StatsRange };

export const statsReadValues = ({ projectId, tag, range }: StatsQuery): unknown[] => [
  projectId,
  tag,
  range.from.toISOString(),
  range.to.toISOString(),
  statsBucketMs[range.granularity] / 1000,
];

/** The counters of a project's messages (tag '') or one tag's, a number per hour or day of the range, empty ones zeros. */
export async function readStats(pool: Pool, query: StatsQuery): Promise<StatsSeries> {
  const { from, to, granularity } = query.range;
  const buckets = Math.round((to.getTime() - from.getTime()) / statsBucketMs[granularity]);
  const series = Object.fromEntries(statsCounters.map((counter) => [counter, new Array<number>(buckets).fill(0)])) as StatsSeries;
  const found = await pool.query<{ bucket: number } & Record<StatsCounter, string>>({ name: 'stats-read', text: statsReadSql, values: statsReadValues(query) });
  for (const row of found.rows) for (const counter of statsCounters) series[counter][row.bucket] = Number(row[counter]);
  return series;
}
