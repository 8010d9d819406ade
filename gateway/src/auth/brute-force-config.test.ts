// The gateway's settings of the brute-force limit, read through its whole configuration spec as main.ts reads them.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { ConfigError, loadConfig } from '@notify/platform';
import { configSpec } from '../config.ts';

const required = { GATEWAY_TOKEN: 'gateway-token-of-at-least-some-length' };

test('by default 20 refused keys a minute are allowed per address, and X-Forwarded-For is not trusted', () => {
  const config = loadConfig(configSpec, required);
  assert.deepEqual(config.authFailureRate, { points: 20, windowSeconds: 60 });
  assert.equal(config.trustedProxyHops, 0);
});

test('NOTIFY_AUTH_FAILURE_RATE takes the form of the send rate, and TRUSTED_PROXY_HOPS the number of proxies', () => {
  const config = loadConfig(configSpec, { ...required, NOTIFY_AUTH_FAILURE_RATE: '100/hour', TRUSTED_PROXY_HOPS: '2' });
  assert.deepEqual(config.authFailureRate, { points: 100, windowSeconds: 3_600 });
  assert.equal(config.trustedProxyHops, 2);
});

test('malformed values stop the gateway, listed with the other configuration faults', () => {
  const environment = { ...required, NOTIFY_AUTH_FAILURE_RATE: '20 per minute', TRUSTED_PROXY_HOPS: '-1', NOTIFY_PUBLIC_SEND_RATE: '0/min' };
  assert.throws(
    () => loadConfig(configSpec, environment),
    (error: unknown) => {
      assert.ok(error instanceof ConfigError);
      const faults = error.faults.join('\n');
      assert.match(faults, /NOTIFY_AUTH_FAILURE_RATE: must be <count>\/<unit> .*\(got "20 per minute"\)/);
      assert.match(faults, /TRUSTED_PROXY_HOPS/);
      assert.match(faults, /NOTIFY_PUBLIC_SEND_RATE/);
      return true;
    },
  );
  assert.throws(() => loadConfig(configSpec, { ...required, NOTIFY_AUTH_FAILURE_RATE: '0/min' }), /NOTIFY_AUTH_FAILURE_RATE: must allow at least 1 request/);
});
