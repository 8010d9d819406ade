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
  const tokens = [first.gatewayToken, first.mailerToken, first.bounceToken, first.adminToken];
  assert.ok(tokens.every((token) => token.length >= 32));
  assert.equal(new Set(tokens).size, 4, 'each caller has its own token');
  assert.equal(statSync(file).mode & 0o777, 0o600);
  assert.deepEqual(await loadDevSecrets(file), first);
});

test('an unusable secrets file is replaced by new tokens', async () => {
  const file = join(dir, 'broken.json');
  writeFileSync(file, '{"gatewayToken": "short"}');
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
  const old = { gatewayToken: 'g'.repeat(32), mailerToken: 'm'.repeat(32), bounceToken: 'b'.repeat(32), adminToken: 'a'.repeat(32) };
  writeFileSync(file, JSON.stringify(old), { mode: 0o600 });
  const secrets = await loadDevSecrets(file);
  assert.deepEqual({ ...secrets, dataKey: undefined }, { ...old, dataKey: undefined });
  assert.equal(Buffer.from(secrets.dataKey, 'base64').length, 32);
  assert.deepEqual(await loadDevSecrets(file), secrets);
});

test('a file from before per-caller tokens (one internal token) gets four new ones', async () => {
  const file = join(dir, 'internal.json');
  writeFileSync(file, JSON.stringify({ internalToken: 'i'.repeat(32), adminToken: 'a'.repeat(32) }), { mode: 0o600 });
  const secrets = await loadDevSecrets(file);
  assert.ok(secrets.gatewayToken.length >= 32 && secrets.mailerToken.length >= 32 && secrets.bounceToken.length >= 32);
  assert.notEqual(secrets.adminToken, 'a'.repeat(32));
  assert.deepEqual(await loadDevSecrets(file), secrets);
});
