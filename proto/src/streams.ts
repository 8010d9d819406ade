// Where the messages of messaging/v1 travel: JetStream streams, subjects, durable consumers and the key-value bucket,
// named under one prefix (empty in production; a test run passes its own, such as `t1f3a_`, to be isolated), and the
// settings each stream is created with. Every service that creates one creates it from here, with the same settings.

export interface Topology {
  readonly prefix: string;
  readonly jobsStream: string;
  readonly jobsSubject: string;
  readonly eventsStream: string;
  /**
   * Subject of one message's delivery events, as single events (a mailer before batches published them there); the
   * events stream captures all of them.
   */
  eventsSubject(messageId: number): string;
  /** Subject of the mailers' batches of delivery events (DeliveryEventBatch), inside `eventsSubjects`. */
  readonly eventBatchesSubject: string;
  readonly eventsSubjects: string;
  readonly mailerConsumer: string;
  readonly eventsConsumer: string;
  /** Core NATS subject on which auth-svc announces created and revoked keys and plan changes (KeyAnnouncement). */
  readonly keyInvalidationSubject: string;
  /** Stream keeping the server's MAX_DELIVERIES advisories for the mailers' consumer, and dispatch-svc's consumer of it. */
  readonly deliveryLimitsStream: string;
  readonly deliveryLimitsSubject: string;
  readonly deliveryLimitsConsumer: string;
  /** Stream keeping the bytes of every job or event no reader could read (`<deadLettersSubject>.jobs|events`). */
  readonly deadLettersStream: string;
  deadLettersSubject(origin: 'jobs' | 'events'): string;
  /** Webhook deliveries (dispatch-svc → webhook-svc), one subject per endpoint, and the senders' durable consumer. */
  readonly webhooksStream: string;
  webhooksSubject(endpointId: number): string;
  readonly webhooksSubjects: string;
  readonly webhookConsumer: string;
  /** The mailers' record of finished deliveries (a key-value bucket; its stream is `KV_<bucket>`). */
  readonly outcomesBucket: string;
  /** The mailers' shared per-destination throttle state: live replicas and slowed domains (a key-value bucket). */
  readonly throttleBucket: string;
  /** The live webhook-svc replicas, among which each endpoint's concurrency is shared (a key-value bucket). */
  readonly webhookReplicasBucket: string;
}

export function topology(prefix: string): Topology {
  const subjectPrefix = prefix.toLowerCase().replace(/[^a-z0-9_-]/g, '_');
  const streamPrefix = prefix.toUpperCase();
  const jobsStream = `${streamPrefix}NOTIFY_JOBS`;
  const mailerConsumer = `${streamPrefix}mailer`;
  return {
    prefix,
    jobsStream,
    jobsSubject: `${subjectPrefix}notify.jobs.email`,
    eventsStream: `${streamPrefix}NOTIFY_EVENTS`,
    eventsSubject: (messageId) => `${subjectPrefix}notify.events.${messageId}`,
    eventBatchesSubject: `${subjectPrefix}notify.events.batch`,
    eventsSubjects: `${subjectPrefix}notify.events.>`,
    mailerConsumer,
    eventsConsumer: `${streamPrefix}dispatch-events`,
    keyInvalidationSubject: `${subjectPrefix}notify.auth.key-revoked`,
    deliveryLimitsStream: `${streamPrefix}NOTIFY_DELIVERY_LIMITS`,
    deliveryLimitsSubject: `$JS.EVENT.ADVISORY.CONSUMER.MAX_DELIVERIES.${jobsStream}.${mailerConsumer}`,
    deliveryLimitsConsumer: `${streamPrefix}dispatch-delivery-limits`,
    deadLettersStream: `${streamPrefix}NOTIFY_DEAD_LETTERS`,
    deadLettersSubject: (origin) => `${subjectPrefix}notify.dead-letters.${origin}`,
    outcomesBucket: `${streamPrefix}NOTIFY_OUTCOMES`,
    webhooksStream: `${streamPrefix}NOTIFY_WEBHOOKS`,
    webhooksSubject: (endpointId) => `${subjectPrefix}notify.webhooks.${endpointId}`,
    webhooksSubjects: `${subjectPrefix}notify.webhooks.>`,
    webhookConsumer: `${streamPrefix}webhook-sender`,
    throttleBucket: `${streamPrefix}NOTIFY_THROTTLE`,
    webhookReplicasBucket: `${streamPrefix}NOTIFY_WEBHOOK_REPLICAS`,
  };
}

/** A stream's settings; its storage is always file and its replicas the deployment's (NATS_STREAM_REPLICAS). */
export interface StreamDeclaration {
  readonly name: string;
  readonly subjects: readonly string[];
  /** workqueue: a message leaves once acknowledged; limits: kept until `maxAgeMs`. */
  readonly retention: 'workqueue' | 'limits';
  /** JetStream drops a second publish with the same Nats-Msg-Id within this window. */
  readonly duplicateWindowMs?: number;
  readonly maxAgeMs?: number;
}

/**
 * The duplicate window of the jobs and events streams. dispatch-svc's outbox relay must republish a job within it
 * (dispatch-svc checks its timing against it at start); a job published again later is kept from being mailed twice by
 * the outcome ledger instead.
 */
export const duplicateWindowMs = 2 * 60_000;
/** Advisories older than this are dropped; by then the jobs they name have long been dealt with. */
const deliveryLimitsMaxAgeMs = 7 * 86_400_000;
/** Unreadable messages are kept this long for an operator to inspect (`nats stream view`). */
const deadLettersMaxAgeMs = 14 * 86_400_000;

/** Every stream, by its owner's needs: the jobs and events streams are created by both dispatch-svc and mailer-svc. */
export function streamDeclarations(names: Topology) {
  return {
    jobs: { name: names.jobsStream, subjects: [names.jobsSubject], retention: 'workqueue', duplicateWindowMs },
    events: { name: names.eventsStream, subjects: [names.eventsSubjects], retention: 'workqueue', duplicateWindowMs },
    deliveryLimits: { name: names.deliveryLimitsStream, subjects: [names.deliveryLimitsSubject], retention: 'workqueue', maxAgeMs: deliveryLimitsMaxAgeMs },
    webhooks: { name: names.webhooksStream, subjects: [names.webhooksSubjects], retention: 'workqueue', duplicateWindowMs },
    deadLetters: {
      name: names.deadLettersStream,
      subjects: [names.deadLettersSubject('jobs'), names.deadLettersSubject('events')],
      retention: 'limits',
      maxAgeMs: deadLettersMaxAgeMs,
    },
  } as const satisfies Record<string, StreamDeclaration>;
}

/**
 * How long a finished delivery's outcome is kept in the bucket. A job comes back after its delivery finished within
 * the consumer's ack wait (lost acknowledgement, killed replica), or after an outage made the outbox relay publish it
 * again past the duplicate window; a day covers both with a wide margin, at a few hundred bytes per message.
 */
export const outcomeTtlMs = 24 * 3_600_000;
