import assert from 'node:assert/strict';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { ConfigError, databaseSettings, integer, jetStreamSettings, loadConfig, natsSettings, oneOf, secret, testFaultSettings, url } from './config.ts';

const spec = {
  port: integer('PORT', { description: 'listen port', default: 8080, min: 1, max: 65535 }),
  databaseUrl: url('DATABASE_URL', { description: 'database', protocols: ['postgres', 'postgresql'] }),
  token: secret('GATEWAY_TOKEN', { description: 'token' }),
  level: oneOf('LOG_LEVEL', ['info', 'debug'], { description: 'level', default: 'info' }),
};

test('defaults fill what the environment leaves out', () => {
  const config = loadConfig(spec, { DATABASE_URL: 'postgres://localhost/x', GATEWAY_TOKEN: 'x'.repeat(32) });
  assert.deepEqual(config, { port: 8080, databaseUrl: 'postgres://localhost/x', token: 'x'.repeat(32), level: 'info' });
});

test('every fault is reported at once and secrets are not echoed', () => {
  assert.throws(
    () => loadConfig(spec, { PORT: '99999', LOG_LEVEL: 'loud', GATEWAY_TOKEN: 'short-secret' }),
    (error: unknown) => {
      assert.ok(error instanceof ConfigError);
      assert.equal(error.faults.length, 4);
      assert.match(error.message, /PORT: must be at most 65535/);
      assert.match(error.message, /DATABASE_URL: is required/);
      assert.match(error.message, /LOG_LEVEL: must be one of info, debug/);
      assert.match(error.message, /GATEWAY_TOKEN: must be at least 16/);
      assert.doesNotMatch(error.message, /short-secret/);
      return true;
    },
  );
});

test('a secret can come from the file named by <ENV>_FILE', () => {
  const dir = mkdtempSync(join(tmpdir(), 'notify-config-'));
  writeFileSync(join(dir, 'token'), `${'s'.repeat(20)}\n`);
  const config = loadConfig(spec, { DATABASE_URL: 'postgresql://h/d', GATEWAY_TOKEN_FILE: join(dir, 'token') });
  assert.equal(config.token, 's'.repeat(20));
});

test('durations accept a unit and default to seconds', async () => {
  const { parseDuration } = await import('./config.ts');
  assert.equal(parseDuration('24h'), 86_400_000);
  assert.equal(parseDuration('250ms'), 250);
  assert.equal(parseDuration('90'), 90_000);
  assert.throws(() => parseDuration('1 fortnight'), /must be a duration/);
});

test('NATS_URL, like the database URL, can come from the file named by its _FILE variable, and a direct value wins', () => {
  const dir = mkdtempSync(join(tmpdir(), 'notify-config-'));
  writeFileSync(join(dir, 'nats-url'), 'nats://mailer:s3cret@nats-0:4222,nats://mailer:s3cret@nats-1:4222\n');
  writeFileSync(join(dir, 'database-url'), 'postgres://notify:s3cret@db:5432/notify\n');
  const spec = { ...natsSettings, ...databaseSettings({ maxPoolSize: 10 }) };
  const files = { NATS_URL_FILE: join(dir, 'nats-url'), DATABASE_URL_FILE: join(dir, 'database-url') };
  const config = loadConfig(spec, files);
  assert.equal(config.natsUrl, 'nats://mailer:s3cret@nats-0:4222,nats://mailer:s3cret@nats-1:4222');
  assert.equal(config.databaseUrl, 'postgres://notify:s3cret@db:5432/notify');
  assert.equal(loadConfig(spec, { ...files, NATS_URL: 'nats://direct:4222' }).natsUrl, 'nats://direct:4222');
  assert.throws(() => loadConfig(spec, { NATS_URL_FILE: join(dir, 'missing') }), /NATS_URL_FILE: cannot be read/);
});

test('a URL read from a file is validated like one from the environment, and its credentials are never printed', () => {
  const dir = mkdtempSync(join(tmpdir(), 'notify-config-'));
  writeFileSync(join(dir, 'database-url'), 'mysql://notify:hunter2hunter2@db/notify');
  assert.throws(
    () => loadConfig(databaseSettings({ maxPoolSize: 10 }), { DATABASE_URL_FILE: join(dir, 'database-url') }),
    (error: unknown) => {
      assert.ok(error instanceof ConfigError);
      assert.deepEqual(error.faults, ['DATABASE_URL: must use postgres or postgresql']);
      assert.doesNotMatch(error.message, /hunter2/);
      return true;
    },
  );
});

test('the shared groups keep their defaults, and each service bounds its own database pool', () => {
  const spec = {
    ...natsSettings,
    ...jetStreamSettings,
    ...databaseSettings({ maxPoolSize: 200 }),
    ...testFaultSettings(['none', 'exit-after-send'] as const, '`exit-after-send` kills'),
  };
  assert.deepEqual(loadConfig(spec, {}), {
    natsUrl: 'nats://127.0.0.1:4222',
    natsPrefix: '',
    natsUser: '',
    natsPassword: '',
    natsNkeySeed: '',
    natsStreamReplicas: 1,
    databaseUrl: 'postgres://postgres@127.0.0.1:5432/notify',
    databasePoolSize: 10,
    nodeEnv: 'production',
    testFault: 'none',
  });
  assert.throws(() => loadConfig(spec, { DATABASE_POOL_SIZE: '201' }), /DATABASE_POOL_SIZE: must be at most 200/);
  assert.equal(loadConfig(databaseSettings({ maxPoolSize: 1000 }), { DATABASE_POOL_SIZE: '1000' }).databasePoolSize, 1000);
  assert.throws(() => loadConfig(spec, { NOTIFY_NATS_PREFIX: 'a.b' }), /NOTIFY_NATS_PREFIX: must match/);
  assert.throws(() => loadConfig(spec, { NATS_STREAM_REPLICAS: '6' }), /NATS_STREAM_REPLICAS: must be at most 5/);
  assert.throws(() => loadConfig(spec, { NOTIFY_TEST_FAULT: 'exit-after-commit' }), /NOTIFY_TEST_FAULT: must be one of none, exit-after-send/);
  assert.equal(loadConfig(spec, { NOTIFY_TEST_FAULT: 'exit-after-send', NODE_ENV: 'test' }).testFault, 'exit-after-send');
  assert.match(spec.testFault.description, /^TEST ONLY, refused unless NODE_ENV=test: `exit-after-send` kills$/);
});
