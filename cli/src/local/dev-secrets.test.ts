import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, test } from 'node:test';
import { loadDevSecrets } from './dev-secrets.ts';

const dir = mkdtempSync(join(tmpdir(), 'notify-secrets-'));
after(() => rmSync(dir, { recursive: true, force: true }));

test('tokens are generated once, kept private, and read back on the next start', async () => {
  const file = join(dir, 'nested', 'dev-secrets.json');
  const first = await loadDevSecrets(file);
  assert.ok(first.internalToken.length >= 32 && first.adminToken.length >= 32);
  assert.notEqual(first.internalToken, first.adminToken);
  assert.equal(statSync(file).mode & 0o777, 0o600);
  assert.deepEqual(await loadDevSecrets(file), first);
});

test('an unusable secrets file is replaced by new tokens', async () => {
  const file = join(dir, 'broken.json');
  writeFileSync(file, '{"internalToken": "short"}');
  const secrets = await loadDevSecrets(file);
  assert.ok(secrets.adminToken.length >= 32);
  assert.deepEqual(await loadDevSecrets(file), secrets);
});

test('a data key of 32 random bytes is generated beside the tokens', async () => {
  const secrets = await loadDevSecrets(join(dir, 'with-key.json'));
  assert.equal(Buffer.from(secrets.dataKey, 'base64').length, 32);
});

test('a file kept before the data key existed keeps its tokens and gains a key', async () => {
  const file = join(dir, 'old.json');
  const old = { internalToken: 'i'.repeat(32), adminToken: 'a'.repeat(32) };
  writeFileSync(file, JSON.stringify(old), { mode: 0o600 });
  const secrets = await loadDevSecrets(file);
  assert.equal(secrets.internalToken, old.internalToken);
  assert.equal(secrets.adminToken, old.adminToken);
  assert.equal(Buffer.from(secrets.dataKey, 'base64').length, 32);
  assert.deepEqual(await loadDevSecrets(file), secrets);
});
