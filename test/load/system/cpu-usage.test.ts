import assert from 'node:assert/strict';
import { test } from 'node:test';
import { cpuPerMessage } from './cpu-usage.ts';

test('CPU per message is each group’s use between snapshots, with the unaccounted machine time as other', () => {
  const before = new Map([
    ['gateway', 1_000],
    ['postgres (this run)', 500],
    ['machine', 10_000],
  ]);
  const after = new Map([
    ['gateway', 1_400],
    ['postgres (this run)', 700],
    ['mailer-svc', 100],
    ['machine', 11_000],
  ]);
  assert.deepEqual(cpuPerMessage(before, after, 100), {
    gateway: 4,
    'postgres (this run)': 2,
    'mailer-svc': 1,
    'other (not this run)': 3,
    'machine total': 10,
  });
});
