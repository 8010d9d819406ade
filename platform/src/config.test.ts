import assert from 'node:assert/strict';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { ConfigError, integer, loadConfig, oneOf, secret, url } from './config.ts';

const spec = {
  port: integer('PORT', { description: 'listen port', default: 8080, min: 1, max: 65535 }),
  databaseUrl: url('DATABASE_URL', { description: 'database', protocols: ['postgres', 'postgresql'] }),
  token: secret('INTERNAL_TOKEN', { description: 'token' }),
  level: oneOf('LOG_LEVEL', ['info', 'debug'], { description: 'level', default: 'info' }),
};

test('defaults fill what the environment leaves out', () => {
  const config = loadConfig(spec, { DATABASE_URL: 'postgres://localhost/x', INTERNAL_TOKEN: 'x'.repeat(32) });
  assert.deepEqual(config, { port: 8080, databaseUrl: 'postgres://localhost/x', token: 'x'.repeat(32), level: 'info' });
});

test('every fault is reported at once and secrets are not echoed', () => {
  assert.throws(
    () => loadConfig(spec, { PORT: '99999', LOG_LEVEL: 'loud', INTERNAL_TOKEN: 'short-secret' }),
    (error: unknown) => {
      assert.ok(error instanceof ConfigError);
      assert.equal(error.faults.length, 4);
      assert.match(error.message, /PORT: must be at most 65535/);
      assert.match(error.message, /DATABASE_URL: is required/);
      assert.match(error.message, /LOG_LEVEL: must be one of info, debug/);
      assert.match(error.message, /INTERNAL_TOKEN: must be at least 16/);
      assert.doesNotMatch(error.message, /short-secret/);
      return true;
    },
  );
});

test('a secret can come from the file named by <ENV>_FILE', () => {
  const dir = mkdtempSync(join(tmpdir(), 'notify-config-'));
  writeFileSync(join(dir, 'token'), `${'s'.repeat(20)}\n`);
  const config = loadConfig(spec, { DATABASE_URL: 'postgresql://h/d', INTERNAL_TOKEN_FILE: join(dir, 'token') });
  assert.equal(config.token, 's'.repeat(20));
});

test('durations accept a unit and default to seconds', async () => {
  const { parseDuration } = await import('./config.ts');
  assert.equal(parseDuration('24h'), 86_400_000);
  assert.equal(parseDuration('250ms'), 250);
  assert.equal(parseDuration('90'), 90_000);
  assert.throws(() => parseDuration('1 fortnight'), /must be a duration/);
});
