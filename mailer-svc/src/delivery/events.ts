// Records a delivery transition on the events stream. The Nats-Msg-Id makes a re-published event a duplicate that
// JetStream drops, so publishing again after a lost PubAck is safe. Each publish is a `send` span (a child of the job's
// `process` span) whose context the event's headers carry back to dispatch-svc.
import { notifyAttributes } from '@notify/platform';
import { type JetStreamPublisher, publishTraced } from '@notify/platform/nats';
import { type DeliveryEvent, deliveryEventId, encodeDeliveryEvent, type Topology } from '@notify/proto';

export type EventPublisher = (event: DeliveryEvent) => Promise<void>;

export function createEventPublisher(publisher: JetStreamPublisher, names: Topology): EventPublisher {
  return async (event) => {
    const attributes = { [notifyAttributes.messageId]: event.messageId, [notifyAttributes.state]: event.state };
    // retries covers a PubAck timeout or no responders while a stream leader is being elected.
    await publishTraced(
      publisher,
      names.eventsSubject(event.messageId),
      encodeDeliveryEvent(event),
      { msgID: deliveryEventId(event), retries: 3 },
      { attributes },
    );
  };
}
