import assert from 'node:assert/strict';
import { test } from 'node:test';
import { ReplayMemory } from './replay-memory.ts';

const body = { message_id: 41, status: 'queued', celery_task_id: '6f1c2a8e-1c1a-4d5e-9f00-3b7a2d1e4c5f', idempotent_replay: false };
const key = '0b6f3a4e-8e1d-4c2b-a7f5-2d9c1e0b3a46';

function clockedMemory(options: { maxAgeMs?: number; maxEntries?: number } = {}) {
  const clock = { now: 5_000 };
  const memory = new ReplayMemory({ maxAgeMs: options.maxAgeMs ?? 60_000, maxEntries: options.maxEntries ?? 100, now: () => clock.now });
  return { memory, clock };
}

test('an exact replay of a remembered key is its 202 marked as a replay; another body, project or key is not answered', () => {
  const { memory } = clockedMemory();
  memory.remember(7, key, 'fp-1', body, 30_000, memory.ask());
  assert.deepEqual(memory.replay(7, key.toUpperCase(), 'fp-1'), { ...body, idempotent_replay: true });
  assert.equal(memory.replay(7, key, 'fp-2'), undefined, 'a mismatch is for dispatch-svc to judge');
  assert.equal(memory.replay(8, key, 'fp-1'), undefined, 'records are per project');
  assert.equal(memory.replay(7, '9e3c1b7a-0f2d-4a6e-8b5c-1d4e7f0a2b39', 'fp-1'), undefined);
});

test('a remembered answer ends when its record does, counted from before the call, and never outlives maxAgeMs', () => {
  const { memory, clock } = clockedMemory({ maxAgeMs: 60_000 });
  const asked = memory.ask();
  clock.now += 400; // the call took 400 ms: the record's 2 s of life started before its answer came back
  memory.remember(7, key, 'fp-1', body, 2_000, asked);
  clock.now += 1_599;
  assert.ok(memory.replay(7, key, 'fp-1'));
  clock.now += 1;
  assert.equal(memory.replay(7, key, 'fp-1'), undefined);

  memory.remember(7, key, 'fp-1', body, 86_400_000, memory.ask());
  clock.now += 59_999;
  assert.ok(memory.replay(7, key, 'fp-1'));
  clock.now += 1;
  assert.equal(memory.replay(7, key, 'fp-1'), undefined);
});

test('an answer without a record to replay it, or whose record ended during the call, is not kept', () => {
  const { memory, clock } = clockedMemory();
  memory.remember(7, key, 'fp-1', body, 0, memory.ask());
  const asked = memory.ask();
  clock.now += 1_000;
  memory.remember(7, '9e3c1b7a-0f2d-4a6e-8b5c-1d4e7f0a2b39', 'fp-1', body, 1_000, asked);
  assert.equal(memory.size, 0);
});

test('a replay answered by dispatch-svc is remembered as the stored 202, and beyond maxEntries the least recently used goes', () => {
  const { memory } = clockedMemory({ maxEntries: 2 });
  const keys = ['1d0c2b3a-4e5f-4a6b-8c7d-9e0f1a2b3c4d', '2d0c2b3a-4e5f-4a6b-8c7d-9e0f1a2b3c4d', '3d0c2b3a-4e5f-4a6b-8c7d-9e0f1a2b3c4d'];
  memory.remember(7, keys[0]!, 'fp', { ...body, idempotent_replay: true }, 30_000, memory.ask());
  memory.remember(7, keys[1]!, 'fp', body, 30_000, memory.ask());
  assert.deepEqual(memory.replay(7, keys[0]!, 'fp'), { ...body, idempotent_replay: true });
  memory.remember(7, keys[2]!, 'fp', body, 30_000, memory.ask());
  assert.equal(memory.size, 2);
  assert.equal(memory.replay(7, keys[1]!, 'fp'), undefined);
  assert.ok(memory.replay(7, keys[0]!, 'fp'));
  assert.ok(memory.replay(7, keys[2]!, 'fp'));
});
