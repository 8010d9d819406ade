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

export async function startReliableSystem(options: SystemOptions & PrivateServers = {}): Promise<System> {
  const { nats, postgres, redis, ...systemOptions } = options;
  if (nats) infrastructure.natsUrl = nats.url;
  if (postgres) infrastructure.postgresAdminUrl = postgres.adminUrl;
  if (redis) infrastructure.redisUrl = redis.url;
  return startSystem({ ...systemOptions, env: { NODE_ENV: 'test', ...systemOptions.env } });
}
