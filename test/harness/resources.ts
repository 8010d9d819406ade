// Run-unique resources on the machine's shared PostgreSQL, NATS and Redis, removed afterwards:
// tests never touch data that is not theirs.
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { connect } from '@nats-io/transport-node';
import { jetstreamManager } from '@nats-io/jetstream';
import { createLogger } from '@notify/platform';
import { migrate } from '@notify/platform/database';

export const infrastructure = {
  postgresAdminUrl: process.env['TEST_POSTGRES_URL'] ?? 'postgres://postgres@127.0.0.1:5432/postgres',
  natsUrl: process.env['TEST_NATS_URL'] ?? 'nats://127.0.0.1:4222',
  redisUrl: process.env['TEST_REDIS_URL'] ?? 'redis://127.0.0.1:6379',
};

export interface RunResources {
  readonly runId: string;
  readonly databaseUrl: string;
  readonly natsPrefix: string;
  readonly redisPrefix: string;
  readonly mailDir: string;
  cleanup(): Promise<void>;
}

function databaseUrl(name: string): string {
  const url = new URL(infrastructure.postgresAdminUrl);
  url.pathname = `/${name}`;
  return url.toString();
}

/** A database migrated to the current schema, a NATS prefix, a Redis key prefix and a mail folder, unique to this run. */
export async function createRunResources(): Promise<RunResources> {
  const runId = randomBytes(4).toString('hex');
  const database = `notify_t_${runId}`;
  const admin = new pg.Client({ connectionString: infrastructure.postgresAdminUrl });
  await admin.connect();
  await admin.query(`CREATE DATABASE ${database}`);
  await admin.end();
  const url = databaseUrl(database);
  await migrate(url, createLogger('test-migrate', 'warn'));
  const natsPrefix = `t${runId}_`;
  const redisPrefix = `notify-t-${runId}:`;
  const mailDir = mkdtempSync(join(tmpdir(), `notify-mail-${runId}-`));
  return {
    runId,
    databaseUrl: url,
    natsPrefix,
    redisPrefix,
    mailDir,
    async cleanup() {
      await dropPrefixedStreams(infrastructure.natsUrl, natsPrefix);
      await deleteRedisKeys(redisPrefix);
      const client = new pg.Client({ connectionString: infrastructure.postgresAdminUrl });
      await client.connect();
      await client.query(`DROP DATABASE IF EXISTS ${database} WITH (FORCE)`);
      await client.end();
      rmSync(mailDir, { recursive: true, force: true });
    },
  };
}

/** Deletes every stream the run created: both work streams, the delivery-limit stream and KV buckets (`KV_<prefix>...`). */
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

async function deleteRedisKeys(prefix: string): Promise<void> {
  const { Redis } = await import('ioredis');
  const redis = new Redis(infrastructure.redisUrl, { lazyConnect: true, maxRetriesPerRequest: 1 });
  try {
    await redis.connect();
    let cursor = '0';
    do {
      const [next, keys] = await redis.scan(cursor, 'MATCH', `${prefix}*`, 'COUNT', 500);
      if (keys.length > 0) await redis.del(...keys);
      cursor = next;
    } while (cursor !== '0');
  } finally {
    redis.disconnect();
  }
}
