// dispatch-svc's own metrics, registered on the service's registry (gRPC call counts and latencies come from the platform).
import { Counter, Gauge, type Registry } from '@notify/platform';

/** `direct`: published by the send path right after commit; `relay`: republished from the outbox by the relay. */
export type PublishPath = 'direct' | 'relay';

/** What became of one delivery event: see events/event-store.ts. */
export type EventOutcome = 'applied' | 'recorded' | 'duplicate' | 'unknown_message' | 'malformed';

export interface DispatchMetrics {
  readonly jobsPublished: Counter<'path'>;
  readonly outboxBacklog: Gauge;
  readonly messagesAccepted: Counter;
  readonly messagesReplayed: Counter;
  readonly deliveryEvents: Counter<'outcome'>;
  /** Failed messages an operator re-queued (dead-letters/requeue.ts). */
  readonly messagesRequeued: Counter;
  /** Delivery-limit advisories by outcome (dead-letters/delivery-limit.ts). */
  readonly deliveryLimits: Counter<'outcome'>;
}

export function createDispatchMetrics(registry: Registry): DispatchMetrics {
  const deliveryLimits = new Counter({
    name: 'notify_delivery_limit_advisories_total',
    help: 'JetStream delivery-limit advisories for jobs, by outcome (failed: the message ended failed; gone: the job had already left the stream; unreadable)',
    labelNames: ['outcome'],
    registers: [registry],
  });
  for (const outcome of ['failed', 'gone', 'unreadable']) deliveryLimits.inc({ outcome }, 0);
  return {
    jobsPublished: new Counter({
      name: 'notify_jobs_published_total',
      help: 'Delivery jobs JetStream stored (duplicates it dropped are not counted), by who published them',
      labelNames: ['path'],
      registers: [registry],
    }),
    outboxBacklog: new Gauge({
      name: 'notify_outbox_backlog',
      help: 'Outbox rows whose job JetStream has not confirmed yet, as of the relay\'s last pass',
      registers: [registry],
    }),
    messagesAccepted: new Counter({
      name: 'notify_messages_accepted_total',
      help: 'Messages accepted and queued',
      registers: [registry],
    }),
    messagesReplayed: new Counter({
      name: 'notify_messages_replayed_total',
      help: 'Sends answered from an idempotency record instead of creating a message',
      registers: [registry],
    }),
    deliveryEvents: new Counter({
      name: 'notify_delivery_events_total',
      help: 'Delivery events consumed, by outcome (applied moved the message; recorded/duplicate did not)',
      labelNames: ['outcome'],
      registers: [registry],
    }),
    messagesRequeued: new Counter({
      name: 'notify_messages_requeued_total',
      help: 'Failed messages an operator re-queued for a new delivery',
      registers: [registry],
    }),
    deliveryLimits,
  };
}
