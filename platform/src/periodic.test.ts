import assert from 'node:assert/strict';
import { test } from 'node:test';
import { silentLogger } from '@notify/test/harness/logger.ts';
import { runPeriodically } from './periodic.ts';

const logger = silentLogger();
const pause = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

test('passes repeat, and a failing pass does not stop the next ones', async () => {
  let passes = 0;
  const task = runPeriodically(
    'flaky',
    5,
    async () => {
      passes += 1;
      if (passes === 1) throw new Error('first pass fails');
    },
    logger,
  );
  await pause(100);
  await task.stop();
  assert.ok(passes >= 3, `ran ${passes} passes`);
});

test('passes never overlap and stop waits for the pass in progress', async () => {
  let running = 0;
  let overlapped = false;
  let finished = 0;
  const task = runPeriodically(
    'slow',
    1,
    async () => {
      running += 1;
      overlapped ||= running > 1;
      await pause(30);
      running -= 1;
      finished += 1;
    },
    logger,
  );
  await pause(50);
  await task.stop();
  assert.equal(running, 0, 'stop resolved while a pass was running');
  const after = finished;
  await pause(50);
  assert.equal(finished, after, 'no pass ran after stop');
  assert.equal(overlapped, false);
});
