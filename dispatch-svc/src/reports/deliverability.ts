// Each project's deliverability over the last day, as gauges the alerts read (a complaint rate above 0.1 % or a bounce
// rate above 4 %: the limits mailbox providers publish). Computed from PostgreSQL, so every replica reports the same
// numbers whichever of them handled the events; Prometheus keeps any one series (max by project_id).
import type { Pool } from '@notify/platform/database';
import type { DispatchMetrics } from '../metrics.ts';

/** The projects with most mail, at most: bounds the series and the pass; the rest send too little to matter to an alert. */
export const deliverabilityProjectLimit = 1_000;

export interface ProjectDeliverability {
  readonly projectId: number;
  /** `sent` events: the relay accepted the message. */
  readonly delivered: number;
  /** `failed` events with a relay reply: the relay refused the message. */
  readonly refused: number;
  readonly bounced: number;
  readonly complained: number;
  /** Addresses suppressed after a hard bounce at the relay (the message failed). */
  readonly hardBounces: number;
}

/**
 * The day's counts per project, busiest first. Both reads are range scans of the day's rows on their own index
 * (message_events (state, occurred_at), suppressions (reason, created_at)); a message's project is one primary-key probe.
 */
export async function readDeliverability(pool: Pool, limit = deliverabilityProjectLimit): Promise<ProjectDeliverability[]> {
  const result = await pool.query<ProjectDeliverability>({
    name: 'deliverability-last-day',
    text: `WITH day AS (
             SELECT m.project_id,
                    count(*) FILTER (WHERE e.state = 'sent') AS delivered,
                    count(*) FILTER (WHERE e.state = 'failed' AND e.smtp_code IS NOT NULL) AS refused,
                    count(*) FILTER (WHERE e.state = 'bounced') AS bounced,
                    count(*) FILTER (WHERE e.state = 'complained') AS complained
               FROM message_events e JOIN messages m ON m.id = e.message_id
              WHERE e.state IN ('sent', 'failed', 'bounced', 'complained') AND e.occurred_at >= now() - interval '1 day'
              GROUP BY m.project_id
           ), hard AS (
             -- At the relay: the causing message failed (an asynchronous hard bounce is counted as a bounced event).
             SELECT s.project_id, count(*) AS hard_bounces FROM suppressions s JOIN messages m ON m.id = s.message_id
              WHERE s.reason = 'hard_bounce' AND s.created_at >= now() - interval '1 day' AND m.state = 'failed'
              GROUP BY s.project_id
           )
           SELECT day.project_id AS "projectId", delivered::int, refused::int, bounced::int, complained::int,
                  coalesce(hard.hard_bounces, 0)::int AS "hardBounces"
             FROM day LEFT JOIN hard USING (project_id)
            ORDER BY delivered + refused DESC, day.project_id
            LIMIT $1`,
    values: [limit],
  });
  return result.rows.map((row) => ({ ...row, projectId: Number(row.projectId) }));
}

/** Bounces (asynchronous, or hard at the relay) over what reached the relay; complaints over what was delivered. */
export function deliverabilityRatios(day: ProjectDeliverability): { bounce: number; complaint: number } {
  const reached = day.delivered + day.refused;
  return {
    bounce: reached === 0 ? 0 : Math.min(1, (day.bounced + day.hardBounces) / reached),
    complaint: day.delivered === 0 ? 0 : Math.min(1, day.complained / day.delivered),
  };
}

/** One pass: the gauges replaced by the day's numbers, so a project that went quiet leaves them. */
export async function updateDeliverabilityGauges(
  pool: Pool,
  metrics: Pick<DispatchMetrics, 'projectBounceRatio' | 'projectComplaintRatio' | 'projectDeliveredLastDay'>,
): Promise<void> {
  const days = await readDeliverability(pool);
  metrics.projectBounceRatio.reset();
  metrics.projectComplaintRatio.reset();
  metrics.projectDeliveredLastDay.reset();
  for (const day of days) {
    const labels = { project_id: String(day.projectId) };
    const ratios = deliverabilityRatios(day);
    metrics.projectBounceRatio.set(labels, ratios.bounce);
    metrics.projectComplaintRatio.set(labels, ratios.complaint);
    metrics.projectDeliveredLastDay.set(labels, day.delivered);
  }
}
