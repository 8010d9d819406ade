// JetStream's delivery limit as a path to `failed`. A job the mailers took max_deliver times without settling it (a
// replica killed each time, events that could not be recorded) is never offered again but stays in the work-queue
// stream, and the server announces it with a MAX_DELIVERIES advisory. Advisories are plain NATS messages, lost if no
// dispatch-svc replica listens at that moment, so a stream of their own keeps them and a durable consumer ends each
// such message `failed` ("delivery limit reached"), then deletes the job: none vanishes silently.
import type { Logger } from '@notify/platform';
import type { Pool } from '@notify/platform/database';
import {
  consumeDurably,
  type DurableConsumer,
  ensureConsumer,
  ensureStream,
  type JetStreamClient,
  type JetStreamManager,
  type JsMsg,
  nanoseconds,
} from '@notify/platform/nats';
import { readDeliveryJob, schemaHeader, streamDeclarations, type Topology } from '@notify/proto';
import { applyDeliveryEvent } from '../events/event-store.ts';
import type { DispatchMetrics } from '../metrics.ts';

export const deliveryLimitReason = 'delivery limit reached';

/** An advisory not handled within this time is offered again (handling one takes milliseconds, and is idempotent). */
const ackWaitMs = 10_000;
/** Delay before an advisory that failed for a dependency (database down) is offered again. */
const retryDelayMs = 2_000;

/** Creates (or updates) the advisories' stream and its durable consumer; safe from every replica at every start. */
export async function ensureDeliveryLimitStream(jsm: JetStreamManager, names: Topology, replicas: number): Promise<void> {
  await ensureStream(jsm, streamDeclarations(names).deliveryLimits, replicas);
  await ensureConsumer(jsm, names.deliveryLimitsStream, { durable_name: names.deliveryLimitsConsumer, ack_wait: nanoseconds(ackWaitMs), max_deliver: -1 });
}

interface MaxDeliveriesAdvisory {
  stream: string;
  stream_seq: number;
  deliveries: number;
  timestamp: string;
}

function parseAdvisory(message: JsMsg): MaxDeliveriesAdvisory | undefined {
  try {
    const advisory = message.json<Partial<MaxDeliveriesAdvisory>>();
    const { stream, stream_seq: seq, deliveries, timestamp } = advisory;
    if (
      typeof stream === 'string' &&
      Number.isSafeInteger(seq) &&
      Number.isSafeInteger(deliveries) &&
      typeof timestamp === 'string' &&
      !Number.isNaN(Date.parse(timestamp))
    ) {
      return advisory as MaxDeliveriesAdvisory;
    }
  } catch {
    // Not JSON: reported below like any other unreadable advisory.
  }
  return undefined;
}

export interface DeliveryLimitDeps {
  readonly js: JetStreamClient;
  readonly jsm: JetStreamManager;
  readonly pool: Pool;
  readonly names: Topology;
  readonly metrics: DispatchMetrics;
  readonly logger: Logger;
}

/** Ends the job's message `failed`, deletes the job, then acknowledges the advisory; a failure offers it again later. */
async function handle(deps: DeliveryLimitDeps, message: JsMsg): Promise<void> {
  const advisory = parseAdvisory(message);
  if (!advisory) {
    deps.metrics.deliveryLimits.inc({ outcome: 'unreadable' });
    deps.logger.error({ seq: message.seq }, 'unreadable delivery-limit advisory dropped');
    message.term();
    return;
  }
  const context = { stream: advisory.stream, jobSeq: advisory.stream_seq, deliveries: advisory.deliveries };
  try {
    const stored = await deps.jsm.streams.getMessage(advisory.stream, { seq: advisory.stream_seq });
    if (!stored) {
      // Settled or deleted in the meantime (a late acknowledgement, or this advisory handled before a crash).
      deps.metrics.deliveryLimits.inc({ outcome: 'gone' });
      message.ack();
      return;
    }
    const job = readDeliveryJob(stored.data, stored.header?.get(schemaHeader) || undefined);
    // A job refused as unreadable still names its message when that much could be read.
    const messageId = job.ok ? job.value.messageId : job.messageId;
    if (messageId !== undefined) {
      // Numbered like the mailer numbers attempts, so it follows every event the delivery's attempts recorded.
      const attempt = ((job.ok && job.value.requeue?.attemptBase) || 0) + Math.max(1, advisory.deliveries);
      const reason = `${deliveryLimitReason}: offered ${advisory.deliveries} times without an outcome`;
      const outcome = await applyDeliveryEvent(deps.pool, {
        messageId,
        state: 'failed',
        attempt,
        occurredAt: new Date(advisory.timestamp).toISOString(),
        reason,
      });
      deps.metrics.deliveryLimits.inc({ outcome: 'failed' });
      deps.logger.warn({ ...context, messageId, outcome }, 'job reached the delivery limit; message failed');
    } else {
      deps.metrics.deliveryLimits.inc({ outcome: 'unreadable' });
      deps.logger.error(context, 'job at the delivery limit names no message; deleted');
    }
    await deps.jsm.streams.deleteMessage(advisory.stream, advisory.stream_seq).catch(() => false);
    message.ack();
  } catch (error) {
    deps.logger.warn({ ...context, err: error }, 'delivery-limit advisory not handled; it will be offered again');
    message.nak(retryDelayMs);
  }
}

export function startDeliveryLimitConsumer(deps: DeliveryLimitDeps): DurableConsumer {
  return consumeDurably({
    js: deps.js,
    stream: deps.names.deliveryLimitsStream,
    consumer: deps.names.deliveryLimitsConsumer,
    // One advisory at a time per handler, four at once: each makes its own JetStream calls and its own transaction.
    batchSize: 1,
    concurrency: 4,
    logger: deps.logger,
    handle: async (messages) => {
      for (const message of messages) await handle(deps, message);
    },
  });
}
