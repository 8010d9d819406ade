import assert from 'node:assert/strict';
import { test } from 'node:test';
import { parkLimit } from './sender.ts';

test('an endpoint may have parked what its slots get through in the time one may wait, at its pace, never fewer than the floor nor more than 4,096', () => {
  // Its pace not known yet (fewer than 16 of its deliveries have ended).
  assert.equal(parkLimit(undefined, 4, 32, 30_000), 4_096);
  // Four slots, 50 ms each: 80 deliveries a second, 2,400 in 30 s, 80 in 1 s.
  assert.equal(parkLimit(50, 4, 32, 30_000), 2_400);
  assert.equal(parkLimit(50, 4, 32, 1_000), 80);
  // Slow (5 s a request) or not answering (a request open until its 10 s timeout): the floor.
  assert.equal(parkLimit(5_000, 4, 32, 30_000), 32);
  assert.equal(parkLimit(10_000, 4, 32, 30_000), 32);
  // Fast: the cap, however many slots; faster than a millisecond counts as one.
  assert.equal(parkLimit(5, 4, 32, 30_000), 4_096);
  assert.equal(parkLimit(0.2, 4, 32, 1_000), 4_000);
});
