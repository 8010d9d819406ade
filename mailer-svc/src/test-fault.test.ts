import assert from 'node:assert/strict';
import { it } from 'node:test';
import { assertTestFaultAllowed } from './test-fault.ts';

it('refuses a test fault outside NODE_ENV=test and allows it in tests', () => {
  assert.throws(() => assertTestFaultAllowed('exit-after-send', 'production'), /test-only setting and is refused unless NODE_ENV=test/);
  assert.doesNotThrow(() => assertTestFaultAllowed('exit-after-send', 'test'));
  assert.doesNotThrow(() => assertTestFaultAllowed('none', 'production'));
});
