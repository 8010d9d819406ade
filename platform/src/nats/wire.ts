// The messages of proto/messaging on NATS: each travels with the header naming its schema (its type and version).
import { type MsgHdrs, type NatsConnection, headers as natsHeaders } from '@nats-io/transport-node';
import { schemaHeader, type WireMessage } from '@notify/proto';

/** Headers naming the message's schema, to publish it with. */
export function schemaHeaders(message: WireMessage): MsgHdrs {
  const headers = natsHeaders();
  headers.set(schemaHeader, message.schema);
  return headers;
}

/** Publishes on core NATS (fire-and-forget), with the header naming the message's schema. */
export function publishMessage(nc: NatsConnection, subject: string, message: WireMessage): void {
  nc.publish(subject, message.bytes, { headers: schemaHeaders(message) });
}
