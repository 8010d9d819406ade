// `npm run migrate` and the chart's migration Job: applies the schema to DATABASE_URL and exits.
import { loadConfig, url } from '../config.ts';
import { createLogger } from '../logger.ts';
import { migrate } from './index.ts';

const logger = createLogger('migrate', process.env.LOG_LEVEL ?? 'info');
try {
  // The URL carries the password: the chart's Job mounts it as a file (DATABASE_URL_FILE), as it does for the services.
  const config = loadConfig(
    { databaseUrl: url('DATABASE_URL', { description: 'PostgreSQL to migrate', protocols: ['postgres', 'postgresql'], secret: true }) },
    process.env,
  );
  const applied = await migrate(config.databaseUrl, logger);
  logger.info({ applied }, applied.length ? 'migrations applied' : 'schema up to date');
} catch (error) {
  logger.fatal({ err: error }, 'migration failed');
  process.exitCode = 1;
}
