// Records delivery transitions on the events stream, in batches: the events the replica's jobs report while two batches
// wait for their PubAcks go out together as the next, in one DeliveryEventBatch (platform batcher.ts). An event
// alone is a batch of one and waits for nothing; batches grow only as load does. Each caller resolves once the batch
// holding its event is stored, and rejects with it, so a job never moves on (mails, or is acknowledged) before its
// event is recorded. The batch's Nats-Msg-Id hashes its events' ids: published again after a lost PubAck, it is a
// duplicate JetStream drops; an event that reaches the stream twice in different batches is recorded once by
// dispatch-svc (docs/delivery-guarantees.md).
//
// Traces: each event is a `send` span, a child of its job's `process` span, whose context the event carries in the
// batch to dispatch-svc (where a single event carries it in a header).
import { createHash } from 'node:crypto';
import { Batcher, fulfilled, notifyAttributes, recordFailure, traceparentOf } from '@notify/platform';
import { type JetStreamPublisher, schemaHeaders, startSendSpan } from '@notify/platform/nats';
import { type CarriedEvent, type DeliveryEvent, deliveryEventId, encodeDeliveryEventBatch, type Topology } from '@notify/proto';

export type EventPublisher = (event: DeliveryEvent) => Promise<void>;

/**
 * The most events one batch holds: a replica reports at most two per job it holds (its concurrency and the jobs
 * waiting for their destination), and dispatch-svc applies a pull of event messages in one transaction. With each
 * event's texts cut to 2,000 characters (encodeDeliveryEventBatch), 128 stay under NATS's 1 MiB max_payload.
 */
const maxEventsPerBatch = 128;

export function createEventPublisher(publisher: JetStreamPublisher, names: Topology): EventPublisher {
  const subject = names.eventBatchesSubject;
  const batcher = new Batcher<CarriedEvent, void>({
    maxBatchSize: maxEventsPerBatch,
    // Two batches in flight at most: what arrives while both are makes the next. With one, an event that just missed
    // a batch waited for that batch's PubAck and then its own, twice per job and state, which at half the drain's rate
    // held each job's slot long enough to queue jobs behind it (queued->sent p50 0.9 s in the bench).
    concurrency: 2,
    async run(events) {
      const message = encodeDeliveryEventBatch(events);
      const ids = createHash('sha256');
      for (const { event } of events) ids.update(`${deliveryEventId(event)} `);
      // retries covers a PubAck timeout or no responders while a stream leader is being elected.
      await publisher.publish(subject, message.bytes, { msgID: `batch:${ids.digest('base64url')}`, retries: 3, headers: schemaHeaders(message) });
      return events.map(() => fulfilled(undefined));
    },
  });
  return async (event) => {
    const span = startSendSpan({
      destination: subject,
      messageId: deliveryEventId(event),
      attributes: { [notifyAttributes.messageId]: event.messageId, [notifyAttributes.state]: event.state },
    });
    try {
      await batcher.submit({ event, traceparent: traceparentOf(span) });
    } catch (error) {
      recordFailure(span, error);
      throw error;
    } finally {
      span.end();
    }
  };
}
