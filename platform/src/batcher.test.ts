import assert from 'node:assert/strict';
import { test } from 'node:test';
import { Batcher } from './batcher.ts';

/** A run whose batches are recorded and finish only when the test says so. */
function controlledRun() {
  const batches: number[][] = [];
  const finishers: (() => void)[] = [];
  const run = async (items: readonly number[]): Promise<PromiseSettledResult<number>[]> => {
    batches.push([...items]);
    await new Promise<void>((resolve) => finishers.push(resolve));
    return items.map((item) => (item < 0 ? { status: 'rejected', reason: new Error(`negative ${item}`) } : { status: 'fulfilled', value: item * 10 }));
  };
  const finishNext = async (): Promise<void> => {
    finishers.shift()?.();
    await new Promise((resolve) => setImmediate(resolve));
  };
  return { batches, run, finishNext };
}

test('calls made together share a batch; calls made while every batch runs form the next one', async () => {
  const { batches, run, finishNext } = controlledRun();
  const batcher = new Batcher({ maxBatchSize: 100, concurrency: 1, run });
  const first = [1, 2, 3].map((n) => batcher.submit(n));
  await new Promise((resolve) => setImmediate(resolve));
  const second = [4, 5].map((n) => batcher.submit(n));
  await new Promise((resolve) => setImmediate(resolve));
  assert.deepEqual(batches, [[1, 2, 3]]);
  await finishNext();
  assert.deepEqual(batches, [
    [1, 2, 3],
    [4, 5],
  ]);
  await finishNext();
  assert.deepEqual(await Promise.all([...first, ...second]), [10, 20, 30, 40, 50]);
});

test('batches are capped in size and in number at once', async () => {
  const { batches, run, finishNext } = controlledRun();
  const batcher = new Batcher({ maxBatchSize: 2, concurrency: 2, run });
  const answers = [1, 2, 3, 4, 5, 6].map((n) => batcher.submit(n));
  await new Promise((resolve) => setImmediate(resolve));
  assert.deepEqual(batches, [
    [1, 2],
    [3, 4],
  ]);
  await finishNext();
  assert.deepEqual(batches, [
    [1, 2],
    [3, 4],
    [5, 6],
  ]);
  await finishNext();
  await finishNext();
  assert.deepEqual(await Promise.all(answers), [10, 20, 30, 40, 50, 60]);
});

test('each item gets its own outcome, and a failed batch fails only its own items', async () => {
  let calls = 0;
  const batcher = new Batcher<number, number>({
    maxBatchSize: 10,
    concurrency: 1,
    run: async (items) => {
      calls += 1;
      if (items.includes(0)) throw new Error('the batch failed');
      return items.map((item) => (item < 0 ? { status: 'rejected', reason: new Error(`negative ${item}`) } : { status: 'fulfilled', value: item }));
    },
  });
  const mixed = await Promise.allSettled([batcher.submit(1), batcher.submit(-1)]);
  assert.deepEqual(
    mixed.map((r) => r.status),
    ['fulfilled', 'rejected'],
  );
  await assert.rejects(Promise.all([batcher.submit(0), batcher.submit(2)]), /the batch failed/);
  assert.equal(await batcher.submit(3), 3);
  assert.equal(calls, 3);
});

test('with overlapAfterMs, what arrives while a batch runs waits for it, and starts beside it once it has run that long', async () => {
  const { batches, run, finishNext } = controlledRun();
  const batcher = new Batcher({ maxBatchSize: 100, concurrency: 3, overlapAfterMs: 60, run });
  const tick = (): Promise<void> => new Promise((resolve) => setImmediate(resolve));
  const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));
  const startedBy = async (count: number, withinMs: number): Promise<void> => {
    for (const deadline = Date.now() + withinMs; batches.length < count && Date.now() < deadline; ) await sleep(5);
    assert.equal(batches.length, count);
  };
  const answers = [batcher.submit(1)];
  await tick();
  answers.push(batcher.submit(2), batcher.submit(3));
  await tick();
  assert.deepEqual(batches, [[1]], 'the first batch runs alone');
  // It ends before its 60 ms: the items that waited go together in the next one.
  await finishNext();
  assert.deepEqual(batches, [[1], [2, 3]]);
  answers.push(batcher.submit(4));
  await sleep(20);
  assert.deepEqual(batches, [[1], [2, 3]], 'an item waits for a batch that has run less than 60 ms');
  // [2, 3] runs on (stuck): once it has run 60 ms, 4 starts beside it, and 5 waits for 4 in turn.
  await startedBy(3, 1_000);
  answers.push(batcher.submit(5));
  await sleep(20);
  assert.deepEqual(batches, [[1], [2, 3], [4]]);
  await startedBy(4, 1_000);
  // The third running batch is the most at once: 6 waits for one to end, however long they run.
  answers.push(batcher.submit(6));
  await sleep(150);
  assert.deepEqual(batches, [[1], [2, 3], [4], [5]]);
  await finishNext();
  await startedBy(5, 1_000);
  assert.deepEqual(batches, [[1], [2, 3], [4], [5], [6]]);
  await finishNext();
  await finishNext();
  await finishNext();
  assert.deepEqual(await Promise.all(answers), [10, 20, 30, 40, 50, 60]);
});

test('with spacingMs, a batch that is not full starts that long after the one before it started; a full one at once', async () => {
  const started: Array<{ items: number[]; at: number }> = [];
  const batcher = new Batcher<number, number>({
    maxBatchSize: 3,
    concurrency: 1,
    spacingMs: 200,
    run: async (items) => {
      started.push({ items: [...items], at: performance.now() });
      return items.map((item) => ({ status: 'fulfilled', value: item * 10 }));
    },
  });
  const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));
  // Alone, the first starts at once.
  assert.equal(await batcher.submit(1), 10);
  // Two arriving 20 ms apart within the spacing go together, 200 ms after the first started.
  const waiting = [batcher.submit(2)];
  await sleep(20);
  waiting.push(batcher.submit(3));
  assert.deepEqual(await Promise.all(waiting), [20, 30]);
  assert.deepEqual(
    started.map((batch) => batch.items),
    [[1], [2, 3]],
  );
  const gap = (started[1]?.at ?? 0) - (started[0]?.at ?? 0);
  assert.ok(gap >= 199, `the second batch started ${gap.toFixed(1)} ms after the first`);
  // A full batch does not wait for the spacing.
  const full = [4, 5, 6].map((n) => batcher.submit(n));
  assert.deepEqual(await Promise.all(full), [40, 50, 60]);
  const fullGap = (started[2]?.at ?? 0) - (started[1]?.at ?? 0);
  assert.ok(fullGap < 150, `the full batch started ${fullGap.toFixed(1)} ms after the one before`);
  assert.deepEqual(
    started.map((batch) => batch.items),
    [[1], [2, 3], [4, 5, 6]],
  );
});
