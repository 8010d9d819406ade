// PanelService.GetOverview: what happened to a project's messages over the last hour (12 buckets of 5 minutes) and
// the last day (24 buckets of an hour), both ending with the bucket that holds "now".
//   accepted  messages accepted in the bucket (created_at);
//   sent      messages delivered in the bucket (their `sent` event), including those that bounced or drew a complaint
//             since: they were delivered all the same (a report moves them on later, and updated_at with them);
//   failed    messages that ended failed in the bucket (a failed message never changes again, until an operator
//             re-queues one, so its updated_at is that time);
//   deferred  deferrals recorded in the bucket: a message deferred and then sent counts in both, because both happened.
// Every message that moved in the window has its updated_at in it, so one index range (project, updated_at) finds
// them all, however old the project's history is.
import type { Pool } from '@notify/platform/database';
import type { dispatch } from '@notify/proto';

const fiveMinutes = 5 * 60_000;
const oneHour = 60 * 60_000;

type Kind = 'accepted' | 'sent' | 'deferred' | 'failed';

interface CountRow {
  kind: Kind;
  bucket: Date;
  count: number;
}

const countsSince = `
  WITH moved AS (
    SELECT id, state, created_at, updated_at FROM messages
     WHERE project_id = $1 AND organization_id = $2 AND updated_at >= $3)
  SELECT 'accepted' AS kind, date_bin('5 minutes', created_at, timestamptz 'epoch') AS bucket, count(*)::int AS count
    FROM moved WHERE created_at >= $3 GROUP BY 2
  UNION ALL
  SELECT 'failed', date_bin('5 minutes', updated_at, timestamptz 'epoch'), count(*)::int
    FROM moved WHERE state = 'failed' GROUP BY 2
  UNION ALL
  SELECT 'sent', date_bin('5 minutes', e.occurred_at, timestamptz 'epoch'), count(*)::int
    FROM message_events e JOIN moved ON moved.id = e.message_id
   WHERE e.state = 'sent' AND moved.state IN ('sent', 'bounced', 'complained') AND e.occurred_at >= $3 GROUP BY 2
  UNION ALL
  SELECT 'deferred', date_bin('5 minutes', e.occurred_at, timestamptz 'epoch'), count(*)::int
    FROM message_events e JOIN moved ON moved.id = e.message_id
   WHERE e.state = 'deferred' AND e.occurred_at >= $3 GROUP BY 2`;

function emptyBucket(start: number): dispatch.OverviewBucket__Output {
  return { start: new Date(start).toISOString(), accepted: 0, sent: 0, deferred: 0, failed: 0 };
}

/** `count` buckets of `width` ms, the last one holding `now`, filled from 5-minute counts. */
function series(rows: readonly CountRow[], now: number, width: number, count: number): dispatch.OverviewSeries__Output {
  const first = Math.floor(now / width) * width - (count - 1) * width;
  const buckets = Array.from({ length: count }, (_, index) => emptyBucket(first + index * width));
  for (const row of rows) {
    const index = Math.floor((row.bucket.getTime() - first) / width);
    const bucket = buckets[index];
    if (bucket) bucket[row.kind] += row.count;
  }
  return { bucketSeconds: width / 1000, buckets };
}

export async function getOverview(pool: Pool, request: dispatch.GetOverviewRequest__Output, now: Date = new Date()): Promise<dispatch.Overview__Output> {
  // The day's window starts at the top of the hour 23 hours back, which also covers the hour's window.
  const since = new Date(Math.floor(now.getTime() / oneHour) * oneHour - 23 * oneHour);
  const { rows } = await pool.query<CountRow>({ name: 'panel-overview', text: countsSince, values: [request.projectId, request.organizationId, since] });
  return {
    lastHour: series(rows, now.getTime(), fiveMinutes, 12),
    lastDay: series(rows, now.getTime(), oneHour, 24),
    asOf: now.toISOString(),
  };
}
