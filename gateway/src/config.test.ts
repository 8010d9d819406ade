// The gateway's connection URLs as main.ts reads them: from the environment, or from the files a Kubernetes Secret is
// mounted as (REDIS_URL_FILE, NATS_URL_FILE), since both may carry a password.
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, test } from 'node:test';
import { ConfigError, loadConfig } from '@notify/platform';
import { configSpec } from './config.ts';

const required = { GATEWAY_TOKEN: 'gateway-token-of-at-least-some-length' };
const dir = mkdtempSync(join(tmpdir(), 'notify-gateway-config-'));
after(() => rmSync(dir, { recursive: true, force: true }));

test('REDIS_URL and NATS_URL can come from the files named by REDIS_URL_FILE and NATS_URL_FILE', () => {
  writeFileSync(join(dir, 'redis-url'), 'rediss://:redis-password@redis-master.cache:6379\n');
  writeFileSync(join(dir, 'nats-url'), 'nats://gateway:nats-password@nats-0:4222\n');
  const config = loadConfig(configSpec, { ...required, REDIS_URL_FILE: join(dir, 'redis-url'), NATS_URL_FILE: join(dir, 'nats-url') });
  assert.equal(config.redisUrl, 'rediss://:redis-password@redis-master.cache:6379');
  assert.equal(config.natsUrl, 'nats://gateway:nats-password@nats-0:4222');
  assert.deepEqual([loadConfig(configSpec, required).redisUrl, loadConfig(configSpec, required).natsUrl], ['redis://127.0.0.1:6379', 'nats://127.0.0.1:4222']);
});

test('a Redis URL of the wrong scheme is refused without printing its password', () => {
  writeFileSync(join(dir, 'wrong-redis-url'), 'http://:redis-password@redis:6379');
  assert.throws(
    () => loadConfig(configSpec, { ...required, REDIS_URL_FILE: join(dir, 'wrong-redis-url') }),
    (error: unknown) => {
      assert.ok(error instanceof ConfigError);
      assert.deepEqual(error.faults, ['REDIS_URL: must use redis or rediss']);
      assert.doesNotMatch(error.message, /redis-password/);
      return true;
    },
  );
});
