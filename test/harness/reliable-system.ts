// startSystem on servers of the suite's own: a private nats-server, PostgreSQL or redis-server that the reliability
// and chaos suites kill and restart, which must never happen to the machine's shared ones. resources.ts reads the
// servers from its `infrastructure` endpoints, so they are pointed at the private ones first (each test file runs in
// its own process, so this touches no other suite). stop() also removes the streams this run's services created
// beyond the two that resources.ts knows about (the mailer's outcome ledger, dispatch-svc's delivery-limit advisories).
import { connect } from '@nats-io/transport-node';
import { jetstreamManager } from '@nats-io/jetstream';
import type { PrivateNats } from './private-nats.ts';
import type { PrivatePostgres } from './private-postgres.ts';
import type { PrivateRedis } from './private-redis.ts';
import { infrastructure } from './resources.ts';
import { startSystem, type System, type SystemOptions } from './system.ts';

export interface PrivateServers {
  nats?: PrivateNats;
  postgres?: PrivatePostgres;
  redis?: PrivateRedis;
}

/** Deletes every stream of the run's NATS prefix (and its key-value buckets), whoever created it. */
export async function dropPrefixedStreams(natsUrl: string, prefix: string): Promise<void> {
  const connection = await connect({ servers: natsUrl });
  try {
    const jsm = await jetstreamManager(connection);
    const owned = [prefix.toUpperCase(), `KV_${prefix.toUpperCase()}`];
    for await (const stream of jsm.streams.list()) {
      const name = stream.config.name;
      if (owned.some((start) => name.startsWith(start))) await jsm.streams.delete(name).catch(() => false);
    }
  } finally {
    await connection.close();
  }
}

export async function startReliableSystem(options: SystemOptions & PrivateServers = {}): Promise<System> {
  const { nats, postgres, redis, ...systemOptions } = options;
  if (nats) infrastructure.natsUrl = nats.url;
  if (postgres) infrastructure.postgresAdminUrl = postgres.adminUrl;
  if (redis) infrastructure.redisUrl = redis.url;
  const system = await startSystem({ ...systemOptions, env: { NODE_ENV: 'test', ...systemOptions.env } });
  return {
    ...system,
    async stop() {
      await system.stop();
      await dropPrefixedStreams(infrastructure.natsUrl, system.resources.natsPrefix);
    },
  };
}
