// `npm run migrate` and the chart's migration Job: applies the schema to DATABASE_URL and exits. It first waits up to
// a minute for the database to take connections: a Job's pod starts at the same moment as a dev release's PostgreSQL,
// and a NetworkPolicy enforcer admits a new pod's address a moment after the pod starts (kube-router: about a second),
// so a first connection refused is no reason to fail a Job that Kubernetes would only retry after a back-off.
// With --wait (the chart's init container of every service that uses the database): changes nothing, and exits once
// the database holds every migration of this release, so that no service starts on an older schema, whatever the
// order in which Kubernetes starts the Job and the Deployments.
import { setTimeout as sleep } from 'node:timers/promises';
import { loadConfig, url } from '../config.ts';
import { createLogger } from '../logger.ts';
import { migrate, pendingMigrations } from './index.ts';

const logger = createLogger('migrate', process.env.LOG_LEVEL ?? 'info');
/** How often --wait asks again: the migration takes seconds, and a pod waiting a little longer costs nothing. */
const waitInterval = 2_000;
/** How long the migration waits for its first connection. */
const connectDeadline = 60_000;

/** A database not reachable yet, or still starting; a refused password or a missing database fails at once. */
const unreachable = new Set(['ECONNREFUSED', 'ECONNRESET', 'ETIMEDOUT', 'EHOSTUNREACH', 'ENETUNREACH', 'ENOTFOUND', 'EAI_AGAIN', '57P03']);
const isUnreachable = (error: unknown): boolean =>
  unreachable.has((error as { code?: string }).code ?? '') || /terminated unexpectedly|timeout expired/i.test((error as Error).message);

async function waitForConnection(databaseUrl: string): Promise<void> {
  const deadline = Date.now() + connectDeadline;
  for (;;) {
    try {
      await pendingMigrations(databaseUrl);
      return;
    } catch (error) {
      if (!isUnreachable(error) || Date.now() > deadline) throw error;
      logger.info({ err: error }, 'waiting for the database');
    }
    await sleep(waitInterval / 2);
  }
}

async function waitForSchema(databaseUrl: string): Promise<void> {
  for (;;) {
    try {
      const pending = await pendingMigrations(databaseUrl);
      if (pending.length === 0) return void logger.info('schema up to date');
      logger.info({ pending }, 'waiting for the migration');
    } catch (error) {
      logger.info({ err: error }, 'waiting for the database');
    }
    await sleep(waitInterval);
  }
}

try {
  // The URL carries the password: the chart's Job mounts it as a file (DATABASE_URL_FILE), as it does for the services.
  const config = loadConfig(
    { databaseUrl: url('DATABASE_URL', { description: 'PostgreSQL to migrate', protocols: ['postgres', 'postgresql'], secret: true }) },
    process.env,
  );
  if (process.argv.includes('--wait')) {
    await waitForSchema(config.databaseUrl);
  } else {
    await waitForConnection(config.databaseUrl);
    const applied = await migrate(config.databaseUrl, logger);
    logger.info({ applied }, applied.length ? 'migrations applied' : 'schema up to date');
  }
} catch (error) {
  logger.fatal({ err: error }, 'migration failed');
  process.exitCode = 1;
}
