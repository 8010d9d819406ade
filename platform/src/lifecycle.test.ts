import assert from 'node:assert/strict';
import { test } from 'node:test';
import { silentLogger } from '@notify/test/harness/logger.ts';
import { Lifecycle } from './lifecycle.ts';

const silent = silentLogger();

test('handlers run by priority and a slow or failing one does not stop the rest', async () => {
  const lifecycle = new Lifecycle(silent, 50);
  const order: string[] = [];
  lifecycle.onShutdown('close db', 30, async () => void order.push('close db'));
  lifecycle.onShutdown('stop http', 10, async () => void order.push('stop http'));
  lifecycle.onShutdown('hang', 20, () => new Promise(() => order.push('hang')));
  lifecycle.onShutdown('fail', 20, async () => {
    order.push('fail');
    throw new Error('boom');
  });
  const clean = await lifecycle.shutdown('test');
  assert.equal(clean, false);
  assert.deepEqual(order, ['stop http', 'hang', 'fail', 'close db']);
});

test('a second shutdown request waits for the first and runs nothing twice', async () => {
  const lifecycle = new Lifecycle(silent, 1000);
  let runs = 0;
  lifecycle.onShutdown('count', 10, async () => void runs++);
  const [first, second] = await Promise.all([lifecycle.shutdown('a'), lifecycle.shutdown('b')]);
  assert.equal(first, true);
  assert.equal(second, true);
  assert.equal(runs, 1);
  assert.equal(lifecycle.stopping, true);
});
