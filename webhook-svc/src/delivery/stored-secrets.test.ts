import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { test } from 'node:test';
import { createDataKey, webhookSecretSealContext } from '@notify/platform/mail';
import { Webhook } from 'standardwebhooks';
import { signedHeaders, webhookId } from './signature.ts';
import { openSecrets } from './stored-secrets.ts';

const dataKey = createDataKey(randomBytes(32));
const newSecret = (): string => `whsec_${randomBytes(24).toString('base64')}`;
const body = JSON.stringify({ type: 'message.sent', timestamp: '2026-01-01T00:00:00.000Z', data: { message_id: 1, sequence: 1 } });

test('secrets sealed under their endpoint open to sign requests that verify with the original secrets', () => {
  const [current, previous] = [newSecret(), newSecret()];
  const stored = [current, previous].map((secret) => dataKey.seal(secret, webhookSecretSealContext(7)));
  const opened = openSecrets(dataKey, 7, stored);
  assert.deepEqual(opened, [current, previous]);
  const headers = signedHeaders(opened, webhookId(3), Math.floor(Date.now() / 1000), body);
  for (const secret of [current, previous]) assert.doesNotThrow(() => new Webhook(secret).verify(body, headers));
});

test('a secret still stored in clear signs as it is, beside a sealed one', () => {
  const [current, previous] = [newSecret(), newSecret()];
  assert.deepEqual(openSecrets(dataKey, 7, [dataKey.seal(current, webhookSecretSealContext(7)), previous]), [current, previous]);
});

test('a secret sealed for another endpoint, or under another key, does not open; the error names the endpoint', () => {
  const secret = newSecret();
  const otherKey = createDataKey(randomBytes(32));
  for (const sealed of [dataKey.seal(secret, webhookSecretSealContext(8)), otherKey.seal(secret, webhookSecretSealContext(7))]) {
    assert.throws(() => openSecrets(dataKey, 7, [sealed]), { message: 'the signing secret of webhook endpoint 7 does not open with NOTIFY_DATA_KEY' });
  }
});
