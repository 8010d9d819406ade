// The state of a NATS connection, two ways. watchNatsLink follows the client's own status events, free to ask on every
// request: dispatch-svc's send path skips its publish while the link is down (the outbox relay publishes once NATS is
// back), so an accepted send answers in the time of its transaction instead of waiting out a PubAck that cannot come.
// natsReachable is the readiness check: a real round trip, bounded so /readyz answers while the client reconnects.
import { setTimeout as sleep } from 'node:timers/promises';
import type { NatsConnection } from '@nats-io/transport-node';

export interface NatsLink {
  connected(): boolean;
}

export function watchNatsLink(nc: NatsConnection): NatsLink {
  let up = !nc.isClosed();
  void (async () => {
    for await (const status of nc.status()) {
      if (status.type === 'disconnect') up = false;
      else if (status.type === 'reconnect') up = true;
    }
    up = false;
  })();
  return { connected: () => up && !nc.isClosed() };
}

export async function natsReachable(nc: NatsConnection, timeoutMs = 1_000): Promise<boolean> {
  if (nc.isClosed() || nc.isDraining()) return false;
  const answered = nc.rtt().then(() => true);
  return Promise.race([answered, sleep(timeoutMs, false, { ref: false })]);
}
