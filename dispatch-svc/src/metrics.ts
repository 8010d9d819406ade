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
  /** Age of the oldest webhook event not yet published to NOTIFY_WEBHOOKS (events/webhook-relay.ts). */
  readonly webhookUnpublishedAge: Gauge;
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

type Series<L extends string> = Partial<Record<L, string>>;

/** A counter on `registry`; `zeros` are the series it reports from the start, at 0, so that rates over them never go missing. */
function counter<L extends string = string>(
  registry: Registry,
  name: string,
  help: string,
  labelNames: readonly L[] = [],
  zeros: readonly Series<L>[] = [],
): Counter<L> {
  const created = new Counter<L>({ name, help, labelNames, registers: [registry] });
  for (const series of zeros) created.inc(series, 0);
  return created;
}

function gauge<L extends string = string>(registry: Registry, name: string, help: string, labelNames: readonly L[] = []): Gauge<L> {
  return new Gauge<L>({ name, help, labelNames, registers: [registry] });
}

/** The send path's, the outbox's and the schedule's. */
function acceptanceMetrics(
  registry: Registry,
): Pick<
  DispatchMetrics,
  | 'jobsPublished'
  | 'outboxBacklog'
  | 'webhookUnpublishedAge'
  | 'messagesAccepted'
  | 'messagesReplayed'
  | 'scheduledBacklog'
  | 'scheduledReleased'
  | 'scheduledCanceled'
> {
  return {
    jobsPublished: counter(
      registry,
      'notify_jobs_published_total',
      'Delivery jobs JetStream stored (duplicates it dropped are not counted), by who published them',
      ['path'],
    ),
    outboxBacklog: gauge(registry, 'notify_outbox_backlog', "Outbox rows whose job JetStream has not confirmed yet, as of the relay's last pass"),
    webhookUnpublishedAge: gauge(
      registry,
      'notify_webhook_events_unpublished_age_seconds',
      'Age of the oldest webhook event recorded but not yet published to NOTIFY_WEBHOOKS (0 when none), measured every 15 seconds',
    ),
    messagesAccepted: counter(registry, 'notify_messages_accepted_total', 'Messages accepted and queued'),
    messagesReplayed: counter(
      registry,
      'notify_messages_replayed_total',
      'Sends answered from an idempotency record instead of creating a message (replays a gateway answered from memory are not counted here)',
    ),
    scheduledBacklog: gauge(registry, 'notify_scheduled_backlog', 'Scheduled messages (send_at) waiting for their time, counted every 5 seconds'),
    scheduledReleased: counter(registry, 'notify_scheduled_released_total', 'Scheduled messages queued by the releaser when they were due'),
    scheduledCanceled: counter(
      registry,
      'notify_scheduled_canceled_total',
      'Scheduled messages canceled before they were due, by origin (api: DELETE /api/v1/messages/{id}/, panel)',
      ['origin'],
      [{ origin: 'api' }, { origin: 'panel' }, { origin: 'erasure' }],
    ),
  };
}

/** What became of delivered messages: events, dead letters, reports, suppressions, and each project's ratios. */
function deliveryMetrics(
  registry: Registry,
): Pick<
  DispatchMetrics,
  | 'deliveryEvents'
  | 'messagesRequeued'
  | 'deliveryLimits'
  | 'suppressions'
  | 'recipientReports'
  | 'projectBounceRatio'
  | 'projectComplaintRatio'
  | 'projectDeliveredLastDay'
> {
  return {
    deliveryEvents: counter(
      registry,
      'notify_delivery_events_total',
      'Delivery events consumed, by outcome (applied moved the message; recorded/duplicate did not)',
      ['outcome'],
    ),
    messagesRequeued: counter(registry, 'notify_messages_requeued_total', 'Failed messages an operator re-queued for a new delivery'),
    deliveryLimits: counter(
      registry,
      'notify_delivery_limit_advisories_total',
      'JetStream delivery-limit advisories for jobs, by outcome (failed: the message ended failed; gone: the job had already left the stream; unreadable)',
      ['outcome'],
      ['failed', 'gone', 'unreadable'].map((outcome) => ({ outcome })),
    ),
    suppressions: counter(
      registry,
      'notify_suppressions_total',
      "Addresses added to a project's suppression list, by reason (hard_bounce, complaint, unsubscribed, manual)",
      ['reason'],
      ['hard_bounce', 'complaint', 'unsubscribed', 'manual'].map((reason) => ({ reason })),
    ),
    recipientReports: counter(
      registry,
      'notify_recipient_reports_total',
      'Bounce and complaint reports applied to a sent message, by kind (bounced, complained) and suppression (hard_bounce, complaint, none)',
      ['kind', 'suppression'],
      [
        { kind: 'bounced', suppression: 'hard_bounce' },
        { kind: 'bounced', suppression: 'none' },
        { kind: 'complained', suppression: 'complaint' },
      ],
    ),
    projectBounceRatio: gauge(
      registry,
      'notify_project_bounce_ratio',
      'Share of the messages that reached the relay in the last 24 h that bounced (asynchronously, or as a hard bounce at the relay), per project',
      ['project_id'],
    ),
    projectComplaintRatio: gauge(
      registry,
      'notify_project_complaint_ratio',
      'Share of the messages delivered in the last 24 h whose recipient complained (feedback-loop report), per project',
      ['project_id'],
    ),
    projectDeliveredLastDay: gauge(
      registry,
      'notify_project_delivered_last_day',
      "Messages the relay accepted in the last 24 h, per project (the ratios' denominator: small volumes make noisy ratios)",
      ['project_id'],
    ),
  };
}

/** Erasures and the retention purge. */
function retentionMetrics(
  registry: Registry,
): Pick<DispatchMetrics, 'erasures' | 'erasedMessages' | 'retentionPurgedRows' | 'retentionOldestFinalAge' | 'messageRetention' | 'tableSize'> {
  const origins = [{ origin: 'notifyctl' }, { origin: 'panel' }];
  return {
    erasures: counter(
      registry,
      'notify_erasures_total',
      'Erasures of a recipient from a project (notifyctl messages erase, the panel), by origin',
      ['origin'],
      origins,
    ),
    erasedMessages: counter(
      registry,
      'notify_erased_messages_total',
      'Messages whose recipient and data an erasure replaced by the marker, by origin',
      ['origin'],
      origins,
    ),
    retentionPurgedRows: counter(
      registry,
      'notify_retention_purged_rows_total',
      "Rows the retention purge deleted, by table (messages past their organization's retention and the rows that referenced them)",
      ['table'],
      purgedTables.map((table) => ({ table })),
    ),
    retentionOldestFinalAge: gauge(
      registry,
      'notify_retention_oldest_final_message_age_seconds',
      'Age of the oldest message in a final state kept, since its last change, per organization that has one; reported by the purge leader only',
      ['organization_id'],
    ),
    messageRetention: gauge(
      registry,
      'notify_message_retention_seconds',
      "How long an organization's final messages are kept (its own retention, or NOTIFY_MESSAGE_RETENTION), per organization that has any; reported by the purge leader only",
      ['organization_id'],
    ),
    tableSize: gauge(
      registry,
      'notify_table_size_bytes',
      'Size on disk of the message tables, indexes and TOAST included (pg_total_relation_size); reported by the purge leader only',
      ['table'],
    ),
  };
}

export function createDispatchMetrics(registry: Registry): DispatchMetrics {
  return { ...acceptanceMetrics(registry), ...deliveryMetrics(registry), ...retentionMetrics(registry) };
}
