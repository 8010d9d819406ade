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

test('REDIS_SENTINELS lists host:port entries, with the master name and the sentinel password (from a file too)', () => {
  writeFileSync(join(dir, 'sentinel-password'), 'sentinel-secret\n');
  const config = loadConfig(configSpec, {
    ...required,
    REDIS_SENTINELS: 'redis-sentinel-0.cache:26379, 10.0.0.7:26380,[::1]:26381',
    REDIS_SENTINEL_NAME: 'notify',
    REDIS_SENTINEL_PASSWORD_FILE: join(dir, 'sentinel-password'),
  });
  assert.deepEqual(config.redisSentinels, [
    { host: 'redis-sentinel-0.cache', port: 26379 },
    { host: '10.0.0.7', port: 26380 },
    { host: '::1', port: 26381 },
  ]);
  assert.equal(config.redisSentinelName, 'notify');
  assert.equal(config.redisSentinelPassword, 'sentinel-secret');
  const plain = loadConfig(configSpec, required);
  assert.deepEqual([plain.redisSentinels, plain.redisSentinelName, plain.redisSentinelPassword], [[], 'mymaster', '']);
});

test('a malformed REDIS_SENTINELS entry is refused, naming the variable', () => {
  for (const wrong of ['sentinel-0', 'sentinel-0:26379,', 'sentinel-0:0', 'sentinel-0:70000', 'redis://sentinel-0:26379']) {
    assert.throws(
      () => loadConfig(configSpec, { ...required, REDIS_SENTINELS: wrong }),
      (error: unknown) => {
        assert.ok(error instanceof ConfigError);
        assert.deepEqual(error.faults, [`REDIS_SENTINELS: must be host:port entries separated by commas (got ${JSON.stringify(wrong)})`]);
        return true;
      },
    );
  }
});
