import assert from 'node:assert/strict';
import { test } from 'node:test';
import { webhookEventTypes } from '@notify/proto';
import { newWebhookSecret, readEventTypes, urlFaults } from './endpoint-rules.ts';

test('an https URL is accepted; plain http only when private targets are allowed', () => {
  assert.deepEqual(urlFaults('https://hooks.example.com/notify?x=1', false), []);
  assert.deepEqual(urlFaults('http://127.0.0.1:9000/hook', false), ['url: must use https (plain http is allowed only with NOTIFY_WEBHOOK_ALLOW_PRIVATE=true)']);
  assert.deepEqual(urlFaults('http://127.0.0.1:9000/hook', true), []);
});

test('a URL that is not an absolute http(s) URL, or carries credentials, is refused', () => {
  for (const url of ['', '/hook', 'hooks.example.com', 'ftp://example.com/x', 'javascript:alert(1)']) {
    assert.deepEqual(urlFaults(url, true), ['url: must be an absolute http(s) URL'], url);
  }
  assert.deepEqual(urlFaults('https://user:pw@example.com/', false), ['url: must not carry a user name or password']);
  assert.deepEqual(urlFaults(`https://example.com/${'a'.repeat(2_000)}`, false), ['url: must be at most 2000 characters']);
});

test('no event types means all six; given ones are deduplicated in the contract order; unknown ones are named', () => {
  assert.deepEqual(readEventTypes([]), { types: [...webhookEventTypes], faults: [] });
  assert.deepEqual(readEventTypes(['message.failed', 'message.sent', 'message.failed']), { types: ['message.sent', 'message.failed'], faults: [] });
  assert.deepEqual(readEventTypes(['message.sent', 'message.opened']).faults, [
    'event_types: unknown event type "message.opened" (one of message.sent, message.deferred, message.failed, message.bounced, message.complained, message.unsubscribed)',
  ]);
});

test('a secret is whsec_ and the base64 of 32 random bytes, new every time', () => {
  const secret = newWebhookSecret();
  assert.match(secret, /^whsec_[A-Za-z0-9+/]{43}=$/);
  assert.equal(Buffer.from(secret.slice('whsec_'.length), 'base64').length, 32);
  assert.notEqual(newWebhookSecret(), secret);
});
