// startSystem on servers of the suite's own: a private nats-server, PostgreSQL or redis-server that the reliability
// and chaos suites kill and restart, which must never happen to the machine's shared ones. resources.ts reads the
// servers from its `infrastructure` endpoints, so they are pointed at the private ones first (each test file runs in
// its own process, so this touches no other suite).
import type { PrivateNats } from './private-nats.ts';
import type { PrivatePostgres } from './private-postgres.ts';
import type { PrivateRedis } from './private-redis.ts';
import { infrastructure } from './resources.ts';
import { type System, type SystemOptions, startSystem } from './system.ts';

export interface PrivateServers {
  /** A private nats-server or cluster (private-nats-cluster.ts): its URL, or its nodes' URLs comma-separated. */
  nats?: Pick<PrivateNats, 'url'>;
  /** A private PostgreSQL, or anything with an admin URL in front of one (private-postgres-failover.ts's forwarder). */
  postgres?: Pick<PrivatePostgres, 'adminUrl'>;
  redis?: PrivateRedis;
}

/**
 * The settings of a system that things are killed under: the outbox relay and the mailers' retries on a short clock,
 * so that what a fault held back moves again within a second or two, and quiet logs.
 */
export const underFaults = {
  OUTBOX_RELAY_INTERVAL: '200ms',
  OUTBOX_RELAY_MIN_AGE: '1s',
  // Well above a NATS restart (about 3 s): a shorter ack wait would have JetStream redeliver jobs whose outcome a
  // mailer is still waiting to record, the duplicate window docs/delivery-guarantees.md describes (case 3).
  MAILER_ACK_WAIT: '15s',
  MAILER_RETRY_BASE: '200ms',
  MAILER_RETRY_MAX: '1s',
  LOG_LEVEL: 'warn',
};

export async function startReliableSystem(options: SystemOptions & PrivateServers = {}): Promise<System> {
  const { nats, postgres, redis, ...systemOptions } = options;
  if (nats) infrastructure.natsUrl = nats.url;
  if (postgres) infrastructure.postgresAdminUrl = postgres.adminUrl;
  if (redis) infrastructure.redisUrl = redis.url;
  return startSystem({ ...systemOptions, env: { NODE_ENV: 'test', ...systemOptions.env } });
}
