// Run-unique resources on the machine's shared PostgreSQL, NATS and Redis, removed afterwards:
// tests never touch data that is not theirs.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { jetstreamManager } from '@nats-io/jetstream';
import { connect } from '@nats-io/transport-node';
import { createLogger } from '@notify/platform';
import { createTestDatabase, runId as newRunId } from './database.ts';
import { testEnvironment } from './environment.ts';

/** The servers a run's resources go on: the TEST_* ones, unless a suite points them at servers of its own first. */
export const infrastructure = {
  postgresAdminUrl: testEnvironment.postgresAdminUrl,
  natsUrl: testEnvironment.natsUrl,
  redisUrl: testEnvironment.redisUrl,
};

export interface RunResources {
  readonly runId: string;
  readonly databaseUrl: string;
  readonly natsPrefix: string;
  readonly redisPrefix: string;
  readonly mailDir: string;
  cleanup(): Promise<void>;
}

/** A database migrated to the current schema, a NATS prefix, a Redis key prefix and a mail folder, unique to this run. */
export async function createRunResources(): Promise<RunResources> {
  const runId = newRunId();
  const database = await createTestDatabase({ adminUrl: infrastructure.postgresAdminUrl, runId, logger: createLogger('test-migrate', 'warn') });
  const natsPrefix = `t${runId}_`;
  const redisPrefix = `notify-t-${runId}:`;
  const mailDir = mkdtempSync(join(tmpdir(), `notify-mail-${runId}-`));
  return {
    runId,
    databaseUrl: database.url,
    natsPrefix,
    redisPrefix,
    mailDir,
    async cleanup() {
      await dropPrefixedStreams(infrastructure.natsUrl, natsPrefix);
      await deletePrefixedKeys(infrastructure.redisUrl, redisPrefix);
      await database.drop();
      rmSync(mailDir, { recursive: true, force: true });
    },
  };
}

/** Deletes every stream the run created: the work streams, the delivery-limit and dead-letter streams and KV buckets (`KV_<prefix>...`). */
export async function dropPrefixedStreams(natsUrl: string, prefix: string): Promise<void> {
  // NATS_URL's form: one server or a cluster's, comma-separated.
  const connection = await connect({ servers: natsUrl.split(',') });
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

/** Deletes every Redis key the run wrote (`<prefix>…`). */
export async function deletePrefixedKeys(redisUrl: string, prefix: string): Promise<void> {
  const { Redis } = await import('ioredis');
  const redis = new Redis(redisUrl, { lazyConnect: true, maxRetriesPerRequest: 1 });
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
