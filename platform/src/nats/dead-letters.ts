// Where a message no reader could read goes: its bytes and headers, copied to the dead-letters stream (declared in
// proto/src/streams.ts) with why and where from, before the caller terminates it. Redelivering it would fail the same
// way; kept, it can be inspected (`nats stream view NOTIFY_DEAD_LETTERS`) and the writer that produced it found.

import type { JetStreamClient, JsMsg } from '@nats-io/jetstream';
import { headers as natsHeaders } from '@nats-io/transport-node';

/** Copies `message` to `subject` with the reason; resolves false (after logging nothing) when JetStream did not take it. */
export async function deadLetter(js: JetStreamClient, subject: string, message: JsMsg, reason: string): Promise<boolean> {
  const headers = natsHeaders();
  for (const [name, values] of message.headers ?? []) for (const value of values) headers.append(name, value);
  headers.set('Notify-Dead-Letter-Reason', reason.replace(/[\r\n]+/g, ' '));
  headers.set('Notify-Dead-Letter-Origin', `${message.info.stream}:${message.seq}:${message.subject}`);
  // A second copy of the same message (redelivered before it was terminated) is one dead letter.
  return js.publish(subject, message.data, { headers, msgID: `dead:${message.info.stream}:${message.seq}` }).then(
    () => true,
    () => false,
  );
}
