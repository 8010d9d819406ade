// The mailer's Prometheus metrics.
import { Counter, Gauge, Histogram, type Registry } from '@notify/platform';

export type MailerMetrics = ReturnType<typeof createMailerMetrics>;

export function createMailerMetrics(registry: Registry) {
  const deliveries = new Counter({
    name: 'notify_deliveries_total',
    help: 'Delivery attempts by outcome: sent, deferred (will be retried) or failed (final)',
    labelNames: ['outcome'] as const,
    registers: [registry],
  });
  // Zero-valued series from the start, so rates and alerts work before the first failure.
  for (const outcome of ['sent', 'deferred', 'failed']) deliveries.inc({ outcome }, 0);
  const finishedRedeliveries = new Counter({
    name: 'notify_finished_redeliveries_total',
    help: 'Jobs offered again after their delivery had finished, settled from the outcome ledger without mailing, by outcome',
    labelNames: ['state'] as const,
    registers: [registry],
  });
  for (const state of ['sent', 'failed']) finishedRedeliveries.inc({ state }, 0);
  return {
    deliveries,
    finishedRedeliveries,
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
