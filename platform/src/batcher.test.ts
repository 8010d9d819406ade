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
  assert.deepEqual(batches, [[1, 2, 3], [4, 5]]);
  await finishNext();
  assert.deepEqual(await Promise.all([...first, ...second]), [10, 20, 30, 40, 50]);
});

test('batches are capped in size and in number at once', async () => {
  const { batches, run, finishNext } = controlledRun();
  const batcher = new Batcher({ maxBatchSize: 2, concurrency: 2, run });
  const answers = [1, 2, 3, 4, 5, 6].map((n) => batcher.submit(n));
  await new Promise((resolve) => setImmediate(resolve));
  assert.deepEqual(batches, [[1, 2], [3, 4]]);
  await finishNext();
  assert.deepEqual(batches, [[1, 2], [3, 4], [5, 6]]);
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
  assert.deepEqual(mixed.map((r) => r.status), ['fulfilled', 'rejected']);
  await assert.rejects(Promise.all([batcher.submit(0), batcher.submit(2)]), /the batch failed/);
  assert.equal(await batcher.submit(3), 3);
  assert.equal(calls, 3);
});
