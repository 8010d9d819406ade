import assert from 'node:assert/strict';
import { test } from 'node:test';
import { cpuPerMessage, processKey } from './cpu-usage.ts';

test('CPU per message is each group’s use between snapshots, with the unaccounted machine time as other', () => {
  const before = new Map([
    [processKey('gateway', 11), 1_000],
    [processKey('postgres (this run)', 12), 500],
    ['machine', 10_000],
  ]);
  const after = new Map([
    [processKey('gateway', 11), 1_400],
    [processKey('postgres (this run)', 12), 700],
    [processKey('mailer-svc', 13), 100],
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

test('a group whose processes change between snapshots counts each process from its own start: a closed backend does not cancel a new one', () => {
  const before = new Map([
    [processKey('postgres (this run)', 101), 20_000], // busy in earlier phases, closed by its pool during this one
    [processKey('postgres (this run)', 102), 1_000],
    [processKey('mailer-svc', 201), 5_000], // restarted during the phase
    ['machine', 100_000],
  ]);
  const after = new Map([
    [processKey('postgres (this run)', 102), 1_300],
    [processKey('postgres (this run)', 103), 500],
    [processKey('mailer-svc', 202), 900],
    ['machine', 103_000],
  ]);
  assert.deepEqual(cpuPerMessage(before, after, 100), {
    'postgres (this run)': 8,
    'mailer-svc': 9,
    'other (not this run)': 13,
    'machine total': 30,
  });
});
