import assert from 'node:assert/strict';
import { availableParallelism } from 'node:os';
import { test } from 'node:test';
import { setTimeout } from 'node:timers/promises';
import { Worker } from 'node:worker_threads';
import { cpuPerMessage, processKey, runQueueWaitMs, runQueueWaitPerRequest } from './cpu-usage.ts';

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

test('run-queue waits per request are each group’s wait between snapshots, and their sum; none when no process was measured', () => {
  const before = new Map([
    [processKey('gateway', 11), 1_000],
    [processKey('dispatch-svc', 12), 400],
  ]);
  const after = new Map([
    [processKey('gateway', 11), 1_300],
    [processKey('dispatch-svc', 12), 500],
    [processKey('postgres (this run)', 13), 100], // opened during the run: counted from zero
  ]);
  assert.deepEqual(runQueueWaitPerRequest(before, after, 100), { gateway: 3, 'dispatch-svc': 1, 'postgres (this run)': 1, 'in all': 5 });
  assert.equal(runQueueWaitPerRequest(new Map(), new Map(), 100), undefined);
});

test('a process with more busy threads than the machine has cores is seen waiting for a CPU', async () => {
  const spin = `const end = Date.now() + 600; while (Date.now() < end);`;
  const before = runQueueWaitMs(process.pid);
  assert.notEqual(before, undefined, 'this kernel keeps per-thread scheduler statistics (/proc/<pid>/task/<tid>/schedstat)');
  const workers = Array.from({ length: availableParallelism() + 1 }, () => new Worker(spin, { eval: true }));
  const exited = Promise.all(workers.map((worker) => new Promise((resolve) => worker.once('exit', resolve))));
  // Read while they spin: a thread's figure ends with the thread. One thread more than there are cores, busy for
  // 400 ms by then: together they have waited about 400 ms / cores at least.
  await setTimeout(400);
  const during = runQueueWaitMs(process.pid);
  await exited;
  assert.ok((during ?? 0) - (before ?? 0) > 50, `waited ${(during ?? 0) - (before ?? 0)} ms`);
  assert.equal(runQueueWaitMs(2 ** 22 + 1), undefined, 'no such process');
});
