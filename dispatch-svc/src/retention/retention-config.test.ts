import assert from 'node:assert/strict';
import { test } from 'node:test';
import { ConfigError, loadConfig } from '@notify/platform';
import { configSpec } from '../config.ts';

const retentionSpec = { messageRetentionHours: configSpec.messageRetentionHours };

test('NOTIFY_MESSAGE_RETENTION is 30 days unless set, in days or hours', () => {
  assert.equal(loadConfig(retentionSpec, {}).messageRetentionHours, 720);
  assert.equal(loadConfig(retentionSpec, { NOTIFY_MESSAGE_RETENTION: '90d' }).messageRetentionHours, 2_160);
  assert.equal(loadConfig(retentionSpec, { NOTIFY_MESSAGE_RETENTION: '36h' }).messageRetentionHours, 36);
});

test('a malformed NOTIFY_MESSAGE_RETENTION stops the service at start, named with the value it got', () => {
  for (const raw of ['2w', '30', '0d', '10m']) {
    assert.throws(
      () => loadConfig(retentionSpec, { NOTIFY_MESSAGE_RETENTION: raw }),
      (error: unknown) =>
        error instanceof ConfigError &&
        error.faults.length === 1 &&
        error.faults[0]?.startsWith('NOTIFY_MESSAGE_RETENTION: ') === true &&
        error.faults[0].includes(JSON.stringify(raw)),
      raw,
    );
  }
});
