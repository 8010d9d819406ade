import assert from 'node:assert/strict';
import { test } from 'node:test';
import { parseRelayUrls, relayAddress } from './relay-urls.ts';

test('a comma-separated list gives its relays in order, one relay a list of one', () => {
  assert.deepEqual(parseRelayUrls('smtp://a.example:2525, smtps://user:pw@b.example'), ['smtp://a.example:2525', 'smtps://user:pw@b.example']);
  assert.deepEqual(parseRelayUrls('smtp://127.0.0.1:2525'), ['smtp://127.0.0.1:2525']);
});

test('a faulty entry is named by its position, never by its text (it may hold a password)', () => {
  assert.throws(
    () => parseRelayUrls('smtp://a.example, https://user:hunter2@b.example'),
    (error: Error) => error.message === 'relay 2 must use smtp or smtps',
  );
  assert.throws(
    () => parseRelayUrls('hunter2'),
    (error: Error) => error.message === 'the relay must be a URL',
  );
  assert.throws(() => parseRelayUrls('smtp://a.example,'), /relay 2 must be a URL/);
  assert.throws(() => parseRelayUrls('smtp://a.example,smtp://a.example'), /relay 2 is listed twice/);
});

test('a relay is shown as host:port, with the port its scheme implies when it names none', () => {
  assert.equal(relayAddress('smtps://user:hunter2@relay.example'), 'relay.example:465');
  assert.equal(relayAddress('smtp://relay.example'), 'relay.example:587');
  assert.equal(relayAddress('smtp://user:pw@10.0.0.5:2525'), '10.0.0.5:2525');
});
