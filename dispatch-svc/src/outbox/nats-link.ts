// Whether dispatch-svc's NATS connection is up right now, from the client's own status events. While it is down the
// send path skips its publish (the outbox relay publishes once NATS is back), so an accepted send answers in the time
// of its transaction instead of waiting out a PubAck that cannot come.
import type { NatsConnection } from '@notify/platform/nats';

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
