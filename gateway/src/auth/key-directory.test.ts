import assert from 'node:assert/strict';
import { test } from 'node:test';
import { silentLogger } from '@notify/test/harness/logger.ts';
import { KeyDirectory, type ListKeyPrefixes } from './key-directory.ts';

const logger = silentLogger();
const prefixes = (count: number, from = 0): string[] => Array.from({ length: count }, (_, index) => `nk_${(from + index).toString(16).padStart(16, '0')}`);

/** auth-svc's ListKeyPrefixes over a sorted list, recording each page asked for. */
function listing(all: string[]) {
  const asked: Array<[string, number]> = [];
  const list: ListKeyPrefixes = async (after, limit) => {
    asked.push([after, limit]);
    return all.filter((prefix) => prefix > after).slice(0, limit);
  };
  return { list, asked };
}

test('a load pages through every prefix auth-svc has, and only then counts as loaded', async () => {
  const all = prefixes(25_001);
  const { list, asked } = listing(all);
  const directory = new KeyDirectory({ list, logger });
  assert.equal(directory.loaded, false);
  await directory.reload();
  assert.equal(directory.loaded, true);
  assert.equal(directory.size, 25_001);
  assert.deepEqual(asked, [
    ['', 10_000],
    [all[9_999], 10_000],
    [all[19_999], 10_000],
  ]);
  assert.equal(directory.has(all[25_000] as string), true);
  assert.equal(directory.has('nk_ffffffffffffffff'), false);
});

test('a failed load keeps what was known and is not loaded; announcements and verdicts add prefixes at any time', async () => {
  let fail = true;
  const directory = new KeyDirectory({ list: async () => (fail ? Promise.reject(new Error('auth-svc down')) : ['nk_0000000000000001']), logger });
  await directory.reload();
  assert.equal(directory.loaded, false);
  directory.invalidatePrefix('nk_00000000000000aa');
  assert.equal(directory.has('nk_00000000000000aa'), true);
  fail = false;
  await directory.reload();
  assert.deepEqual([directory.loaded, directory.has('nk_0000000000000001'), directory.has('nk_00000000000000aa')], [true, true, false]);
});

test('a prefix learnt while a reload is under way survives the reload', async () => {
  let release: () => void = () => undefined;
  const directory = new KeyDirectory({ list: () => new Promise((resolve) => (release = () => resolve(['nk_0000000000000001']))), logger });
  const reloading = directory.reload();
  directory.add('nk_00000000000000bb');
  release();
  await reloading;
  assert.deepEqual([directory.has('nk_0000000000000001'), directory.has('nk_00000000000000bb')], [true, true]);
});

test('resuming after announcements may have been missed loads everything again', async () => {
  const all = ['nk_0000000000000001'];
  const { list, asked } = listing(all);
  const directory = new KeyDirectory({ list, logger });
  await directory.reload();
  all.push('nk_0000000000000002');
  directory.pause();
  directory.resume();
  await directory.reload();
  assert.equal(directory.has('nk_0000000000000002'), true);
  assert.ok(asked.length >= 2);
});

test('start retries a failed load until it succeeds', async () => {
  let attempts = 0;
  const directory = new KeyDirectory({
    list: async () => (++attempts < 3 ? Promise.reject(new Error('not yet')) : ['nk_0000000000000001']),
    logger,
    retryMs: 20,
  });
  directory.start();
  for (let wait = 0; wait < 100 && !directory.loaded; wait++) await new Promise((resolve) => setTimeout(resolve, 10));
  directory.stop();
  assert.equal(directory.loaded, true);
  assert.equal(attempts, 3);
});
