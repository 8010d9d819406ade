// Every TEST_* variable the tests read, with its default, in one place. The defaults are the machine's own servers on
// their usual ports, the ones `npm start` brings up or finds; a CI job or a developer points the tests elsewhere with
// these variables, for unit and end-to-end tests alike.
const env = process.env;

export const testEnvironment = Object.freeze({
  /** TEST_POSTGRES_URL: a PostgreSQL admin URL, where tests create (and drop) databases of their own. */
  postgresAdminUrl: env.TEST_POSTGRES_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres',
  /** TEST_NATS_URL: a NATS server with JetStream; tests only touch streams and subjects under a prefix of their own. */
  natsUrl: env.TEST_NATS_URL ?? 'nats://127.0.0.1:4222',
  /** TEST_REDIS_URL: a Redis; tests only touch keys under a prefix of their own. */
  redisUrl: env.TEST_REDIS_URL ?? 'redis://127.0.0.1:6379',
  /** TEST_LOG_LEVEL: LOG_LEVEL of the services an end-to-end suite starts. */
  serviceLogLevel: env.TEST_LOG_LEVEL ?? 'info',
  /** TEST_SERVICE_OUTPUT=stdout: the services' output is printed as it comes, not only kept for failure reports. */
  serviceOutputShown: env.TEST_SERVICE_OUTPUT === 'stdout',
  /** TEST_CHROMIUM: the browser the panel's suite drives. */
  chromiumPath: env.TEST_CHROMIUM ?? '/usr/bin/chromium',
});
