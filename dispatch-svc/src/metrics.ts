// dispatch-svc's own metrics, registered on the service's registry (gRPC call counts and latencies come from the platform).
import { Counter, Gauge, type Registry } from '@notify/platform';
import { purgedTables } from './retention/retention-store.ts';

/**
 * `direct`: published by the send path right after commit; `relay`: republished from the outbox by the relay;
 * `release`: published by the releaser right after it queued a scheduled message.
 */
export type PublishPath = 'direct' | 'relay' | 'release';

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
  /** New suppression-list entries, by reason (an address already listed is not counted again). */
  readonly suppressions: Counter<'reason'>;
  /** Bounce and complaint reports that moved a message (reports/report-store.ts). */
  readonly recipientReports: Counter<'kind' | 'suppression'>;
  /** Per-project deliverability over the last day (reports/deliverability.ts), what the alerts read. */
  readonly projectBounceRatio: Gauge<'project_id'>;
  readonly projectComplaintRatio: Gauge<'project_id'>;
  readonly projectDeliveredLastDay: Gauge<'project_id'>;
  /** Scheduled messages not yet released, counted every 5 s (scheduled/releaser.ts). */
  readonly scheduledBacklog: Gauge;
  /** Scheduled messages the releaser queued when they were due. */
  readonly scheduledReleased: Counter;
  /** Scheduled messages canceled, by origin (api, panel, erasure). */
  readonly scheduledCanceled: Counter<'origin'>;
  /** Erasures of a recipient (erasure/erase-recipient.ts), by origin (notifyctl, panel), and the messages they erased. */
  readonly erasures: Counter<'origin'>;
  readonly erasedMessages: Counter<'origin'>;
  /** Rows the retention purge deleted, by table (retention/purge.ts). */
  readonly retentionPurgedRows: Counter<'table'>;
  /** Per organization with final messages: the age of the oldest one kept, and the retention it is kept for (the leader's). */
  readonly retentionOldestFinalAge: Gauge<'organization_id'>;
  readonly messageRetention: Gauge<'organization_id'>;
  /** The message tables' sizes on disk (the leader's). */
  readonly tableSize: Gauge<'table'>;
}

export function createDispatchMetrics(registry: Registry): DispatchMetrics {
  const deliveryLimits = new Counter({
    name: 'notify_delivery_limit_advisories_total',
    help: 'JetStream delivery-limit advisories for jobs, by outcome (failed: the message ended failed; gone: the job had already left the stream; unreadable)',
    labelNames: ['outcome'],
    registers: [registry],
  });
  for (const outcome of ['failed', 'gone', 'unreadable']) deliveryLimits.inc({ outcome }, 0);
  const suppressions = new Counter({
    name: 'notify_suppressions_total',
    help: 'Addresses added to a project\'s suppression list, by reason (hard_bounce, complaint, unsubscribed, manual)',
    labelNames: ['reason'],
    registers: [registry],
  });
  for (const reason of ['hard_bounce', 'complaint', 'unsubscribed', 'manual']) suppressions.inc({ reason }, 0);
  const recipientReports = new Counter({
    name: 'notify_recipient_reports_total',
    help: 'Bounce and complaint reports applied to a sent message, by kind (bounced, complained) and suppression (hard_bounce, complaint, none)',
    labelNames: ['kind', 'suppression'],
    registers: [registry],
  });
  for (const [kind, suppression] of [['bounced', 'hard_bounce'], ['bounced', 'none'], ['complained', 'complaint']] as const) recipientReports.inc({ kind, suppression }, 0);
  const scheduledCanceled = new Counter({
    name: 'notify_scheduled_canceled_total',
    help: 'Scheduled messages canceled before they were due, by origin (api: DELETE /api/v1/messages/{id}/, panel)',
    labelNames: ['origin'],
    registers: [registry],
  });
  for (const origin of ['api', 'panel', 'erasure']) scheduledCanceled.inc({ origin }, 0);
  const erasures = new Counter({
    name: 'notify_erasures_total',
    help: 'Erasures of a recipient from a project (notifyctl messages erase, the panel), by origin',
    labelNames: ['origin'],
    registers: [registry],
  });
  const erasedMessages = new Counter({
    name: 'notify_erased_messages_total',
    help: 'Messages whose recipient and data an erasure replaced by the marker, by origin',
    labelNames: ['origin'],
    registers: [registry],
  });
  for (const origin of ['notifyctl', 'panel']) {
    erasures.inc({ origin }, 0);
    erasedMessages.inc({ origin }, 0);
  }
  const retentionPurgedRows = new Counter({
    name: 'notify_retention_purged_rows_total',
    help: 'Rows the retention purge deleted, by table (messages past their organization\'s retention and the rows that referenced them)',
    labelNames: ['table'],
    registers: [registry],
  });
  for (const table of purgedTables) retentionPurgedRows.inc({ table }, 0);
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
      help: 'Sends answered from an idempotency record instead of creating a message (replays a gateway answered from memory are not counted here)',
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
    suppressions,
    recipientReports,
    projectBounceRatio: new Gauge({
      name: 'notify_project_bounce_ratio',
      help: 'Share of the messages that reached the relay in the last 24 h that bounced (asynchronously, or as a hard bounce at the relay), per project',
      labelNames: ['project_id'],
      registers: [registry],
    }),
    projectComplaintRatio: new Gauge({
      name: 'notify_project_complaint_ratio',
      help: 'Share of the messages delivered in the last 24 h whose recipient complained (feedback-loop report), per project',
      labelNames: ['project_id'],
      registers: [registry],
    }),
    projectDeliveredLastDay: new Gauge({
      name: 'notify_project_delivered_last_day',
      help: 'Messages the relay accepted in the last 24 h, per project (the ratios\' denominator: small volumes make noisy ratios)',
      labelNames: ['project_id'],
      registers: [registry],
    }),
    scheduledBacklog: new Gauge({
      name: 'notify_scheduled_backlog',
      help: 'Scheduled messages (send_at) waiting for their time, counted every 5 seconds',
      registers: [registry],
    }),
    scheduledReleased: new Counter({
      name: 'notify_scheduled_released_total',
      help: 'Scheduled messages queued by the releaser when they were due',
      registers: [registry],
    }),
    scheduledCanceled,
    erasures,
    erasedMessages,
    retentionPurgedRows,
    retentionOldestFinalAge: new Gauge({
      name: 'notify_retention_oldest_final_message_age_seconds',
      help: 'Age of the oldest message in a final state kept, since its last change, per organization that has one; reported by the purge leader only',
      labelNames: ['organization_id'],
      registers: [registry],
    }),
    messageRetention: new Gauge({
      name: 'notify_message_retention_seconds',
      help: 'How long an organization\'s final messages are kept (its own retention, or NOTIFY_MESSAGE_RETENTION), per organization that has any; reported by the purge leader only',
      labelNames: ['organization_id'],
      registers: [registry],
    }),
    tableSize: new Gauge({
      name: 'notify_table_size_bytes',
      help: 'Size on disk of the message tables, indexes and TOAST included (pg_total_relation_size); reported by the purge leader only',
      labelNames: ['table'],
      registers: [registry],
    }),
  };
}
