import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { test } from 'node:test';
import { Webhook } from 'standardwebhooks';
import { signedHeaders, webhookId } from './signature.ts';

const newSecret = (): string => `whsec_${randomBytes(24).toString('base64')}`;
const body = JSON.stringify({ type: 'message.sent', timestamp: '2026-01-01T00:00:00.000Z', data: { message_id: 1, sequence: 1 } });

test('a signature verifies with the standardwebhooks library', () => {
  const secret = newSecret();
  const headers = signedHeaders([secret], webhookId(7), Math.floor(Date.now() / 1000), body);
  assert.deepEqual(new Webhook(secret).verify(body, headers), JSON.parse(body));
  assert.equal(headers['webhook-id'], 'evt_7');
});

test('during a rotation either secret verifies, and a third does not', () => {
  const current = newSecret();
  const previous = newSecret();
  const headers = signedHeaders([current, previous], webhookId(8), Math.floor(Date.now() / 1000), body);
  assert.equal(headers['webhook-signature']?.split(' ').length, 2);
  for (const secret of [current, previous]) assert.doesNotThrow(() => new Webhook(secret).verify(body, headers));
  assert.throws(() => new Webhook(newSecret()).verify(body, headers));
});

test('a changed body does not verify', () => {
  const secret = newSecret();
  const headers = signedHeaders([secret], webhookId(9), Math.floor(Date.now() / 1000), body);
  assert.throws(() => new Webhook(secret).verify(body.replace('"sequence":1', '"sequence":2'), headers));
});

test('a secret signs the same whether its key was made before or not, past the most keys kept too', () => {
  const first = newSecret();
  const timestamp = Math.floor(Date.now() / 1000);
  const signature = signedHeaders([first], webhookId(10), timestamp, body)['webhook-signature'];
  // More secrets than the keys kept: the first one's key is made again, and signs the same.
  for (let index = 0; index < 1_001; index += 1) signedHeaders([newSecret()], webhookId(11), timestamp, body);
  const again = signedHeaders([first], webhookId(10), timestamp, body);
  assert.equal(again['webhook-signature'], signature);
  assert.doesNotThrow(() => new Webhook(first).verify(body, again));
});
