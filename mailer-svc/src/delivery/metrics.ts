// The mailer's Prometheus metrics.
import { Counter, Gauge, Histogram, type Registry } from '@notify/platform';
import type { DeliveryState } from '@notify/proto';

export type MailerMetrics = ReturnType<typeof createMailerMetrics>;

/**
 * Why a delivery failed, as the `reason` label of notify_deliveries_total{outcome="failed"}: a fixed set, so the
 * series stay bounded (the reason's text, with the relay's reply, is in the failed event and the logs).
 * - `rejected`: the relay refused the message for good (5xx to its envelope or content), or nodemailer found it unsendable;
 * - `render_failed`: its template could not be rendered (decision.ts's failureReason, stage `render`);
 * - `retries_exhausted`: still refused for now at its last attempt (MAILER_MAX_ATTEMPTS);
 * - `too_old`: still refused for now once older than MAILER_MAX_AGE;
 * - `unreadable_job`: its job could not be read and was dead-lettered.
 */
export const failureReasons = ['rejected', 'render_failed', 'retries_exhausted', 'too_old', 'unreadable_job'] as const;
export type FailureReason = (typeof failureReasons)[number];

export interface DeliveryLabels {
  outcome: Exclude<DeliveryState, 'sending'>;
  reason?: FailureReason;
}

/**
 * The labels of one count of notify_deliveries_total: `failed` with its reason, `sent` and `deferred` without one.
 * `reason` is what decision.ts's failureReason answers (undefined unless the attempt failed the message).
 */
export function deliveryLabels(outcome: Exclude<DeliveryState, 'sending'>, reason: FailureReason | undefined): DeliveryLabels {
  return outcome === 'failed' && reason !== undefined ? { outcome, reason } : { outcome };
}

export function createMailerMetrics(registry: Registry) {
  const deliveries = new Counter({
    name: 'notify_deliveries_total',
    help: 'Delivery attempts by outcome: sent, deferred (will be retried) or failed (final, with its reason)',
    labelNames: ['outcome', 'reason'] as const,
    registers: [registry],
  });
  // Zero-valued series from the start, so rates and alerts work before the first failure (of each reason).
  for (const outcome of ['sent', 'deferred'] as const) deliveries.inc(deliveryLabels(outcome, undefined), 0);
  for (const reason of failureReasons) deliveries.inc(deliveryLabels('failed', reason), 0);
  const finishedRedeliveries = new Counter({
    name: 'notify_finished_redeliveries_total',
    help: 'Jobs offered again after their delivery had finished, settled from the outcome ledger without mailing, by outcome',
    labelNames: ['state'] as const,
    registers: [registry],
  });
  for (const state of ['sent', 'failed']) finishedRedeliveries.inc({ state }, 0);
  const dkimMails = new Counter({
    name: 'notify_mails_dkim_total',
    help: "Mails the SMTP relay accepted, by whether they carried a DKIM signature (unsigned: MAIL_FROM's domain has no key)",
    labelNames: ['dkim'] as const,
    registers: [registry],
  });
  for (const dkim of ['signed', 'unsigned']) dkimMails.inc({ dkim }, 0);
  return {
    deliveries,
    finishedRedeliveries,
    dkimMails,
    sendDuration: new Histogram({
      name: 'notify_smtp_send_duration_seconds',
      help: 'Time to hand one message to the SMTP relay, including waiting for a pooled connection',
      labelNames: ['result'] as const,
      buckets: [0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60],
      registers: [registry],
    }),
    latency: new Histogram({
      name: 'notify_delivery_latency_seconds',
      help: 'Time from the API accepting a message to the SMTP relay accepting it, retries included',
      buckets: [0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300, 900, 3_600, 14_400, 86_400],
      registers: [registry],
    }),
    inFlight: new Gauge({
      name: 'notify_mailer_in_flight',
      help: 'Jobs this replica holds and is delivering right now',
      registers: [registry],
    }),
  };
}
