// Readiness of the NATS connection: a real round trip, bounded so /readyz answers while the client is reconnecting.
import { setTimeout as sleep } from 'node:timers/promises';
import type { NatsConnection } from '@notify/platform/nats';

export async function natsReachable(nc: NatsConnection, timeoutMs = 1_000): Promise<boolean> {
  if (nc.isClosed() || nc.isDraining()) return false;
  const answered = nc.rtt().then(() => true);
  return Promise.race([answered, sleep(timeoutMs, false, { ref: false })]);
}
