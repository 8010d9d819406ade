// bounce-svc's metrics: every report by what it was and what became of it.
import { Counter, type Registry } from '@notify/platform';

export type ReportKind = 'dsn' | 'arf' | 'unsubscribe' | 'other';
/** applied: changed a message or the suppression list; duplicate: dispatch-svc had it already; ignored: nothing to change
 * (a delay notice, not-spam); refused: 5xx, changed nothing; deferred: 4xx, the reporting server retries. */
export type ReportOutcome = 'applied' | 'duplicate' | 'ignored' | 'refused' | 'deferred';

export interface BounceMetrics {
  record(kind: ReportKind, outcome: ReportOutcome): void;
}

export function createBounceMetrics(registry: Registry): BounceMetrics {
  const reports = new Counter({
    name: 'notify_bounce_reports_total',
    help: 'Reports received over SMTP (bounces, complaints, mailto unsubscribes), by kind and outcome',
    labelNames: ['kind', 'outcome'],
    registers: [registry],
  });
  for (const kind of ['dsn', 'arf', 'unsubscribe', 'other'] as const) {
    for (const outcome of ['applied', 'duplicate', 'ignored', 'refused', 'deferred'] as const) reports.inc({ kind, outcome }, 0);
  }
  return { record: (kind, outcome) => reports.inc({ kind, outcome }) };
}
