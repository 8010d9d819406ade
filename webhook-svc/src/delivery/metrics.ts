// The webhook sender's Prometheus metrics.
import { Counter, Gauge, Histogram, type Registry } from '@notify/platform';

/**
 * `result` of notify_webhook_attempts_total: `succeeded` (2xx), `retrying` (failed, tried again later: any other
 * status, a timeout, a refused address), `failed` (failed, and the schedule is used up or the endpoint answered 410).
 */
export const attemptResults = ['succeeded', 'retrying', 'failed'] as const;
export type AttemptResult = (typeof attemptResults)[number];

/**
 * `action` of notify_webhook_endpoint_busy_total, for a delivery that found its endpoint at its share of open requests:
 * `parked` (it waits in the replica for one of them), `put_back` (handed back to be offered again in a few seconds: too
 * many waiting already, waited too long, or the replica is stopping).
 */
export const busyActions = ['parked', 'put_back'] as const;

export type WebhookMetrics = ReturnType<typeof createWebhookMetrics>;

export function createWebhookMetrics(registry: Registry) {
  const attempts = new Counter({
    name: 'notify_webhook_attempts_total',
    help: 'Webhook delivery attempts by result: succeeded, retrying (failed, will be retried), failed (final)',
    labelNames: ['result'] as const,
    registers: [registry],
  });
  for (const result of attemptResults) attempts.inc({ result }, 0);
  const endpointsDisabled = new Counter({
    name: 'notify_webhook_endpoints_disabled_total',
    help: 'Endpoints the sender disabled, by reason: gone (410) or failing (every attempt failed for 5 days)',
    labelNames: ['reason'] as const,
    registers: [registry],
  });
  for (const reason of ['gone', 'failing']) endpointsDisabled.inc({ reason }, 0);
  const endpointBusy = new Counter({
    name: 'notify_webhook_endpoint_busy_total',
    help: "Deliveries that found their endpoint at its share of the replica's open requests (none, when its requests are the other replicas' part), by action: parked (wait for one in the replica) or put_back (offered again in a few seconds)",
    labelNames: ['action'] as const,
    registers: [registry],
  });
  for (const action of busyActions) endpointBusy.inc({ action }, 0);
  const projectBusy = new Counter({
    name: 'notify_webhook_project_busy_total',
    help: "Deliveries put back (offered again in a few seconds) because their project's endpoints held its share of the replica's requests",
    registers: [registry],
  });
  const endpointsSlowed = new Counter({
    name: 'notify_webhook_endpoints_slowed_total',
    help: 'Times an endpoint was held to one request at a time because its requests timed out in a row',
    registers: [registry],
  });
  const latency = new Histogram({
    name: 'notify_webhook_attempt_duration_seconds',
    help: 'Time from connecting to a webhook endpoint to its answer (or the timeout)',
    labelNames: ['result'] as const,
    buckets: [0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10],
    registers: [registry],
  });
  for (const result of attemptResults) latency.zero({ result });
  return {
    attempts,
    endpointsDisabled,
    latency,
    inFlight: new Gauge({ name: 'notify_webhook_in_flight', help: 'Webhook requests this replica has open', registers: [registry] }),
    endpointBusy,
    projectBusy,
    endpointsSlowed,
  };
}
