// Records a delivery transition on the events stream. The Nats-Msg-Id makes a re-published event a duplicate that
// JetStream drops, so publishing again after a lost PubAck is safe.
import { deliveryEventId, type DeliveryEvent } from '@notify/proto';
import type { JetStreamClient, Topology } from '@notify/platform/nats';

export type EventPublisher = (event: DeliveryEvent) => Promise<void>;

export function createEventPublisher(js: JetStreamClient, names: Topology): EventPublisher {
  return async (event) => {
    // retries covers a PubAck timeout or no responders while a stream leader is being elected.
    await js.publish(names.eventsSubject(event.messageId), JSON.stringify(event), { msgID: deliveryEventId(event), retries: 3 });
  };
}
