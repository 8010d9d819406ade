import assert from 'node:assert/strict';
import { test } from 'node:test';
import { duplicateWindowMs } from '@notify/proto';
import { assertRelayFitsDuplicateWindow, relayRepublishBoundMs } from './duplicate-window.ts';

test('the default relay timing republishes well inside the duplicate window', () => {
  assert.ok(relayRepublishBoundMs(5_000, 1_000) <= duplicateWindowMs / 4);
  assert.doesNotThrow(() => assertRelayFitsDuplicateWindow(5_000, 1_000));
});

test('a relay so slow that its republish could miss the duplicate window is refused at start', () => {
  assert.throws(
    () => assertRelayFitsDuplicateWindow(60_000, 1_000),
    /OUTBOX_RELAY_MIN_AGE \(60000 ms\) \+ OUTBOX_RELAY_INTERVAL \(1000 ms\) must stay under 59 s/,
  );
  assert.doesNotThrow(() => assertRelayFitsDuplicateWindow(55_000, 3_000));
});
