import assert from 'node:assert/strict';
import { test } from 'node:test';
import { parkLimit } from './sender.ts';

test("an endpoint may have parked what its slots get through in a second at its pace, never fewer than the floor nor more than 4,096", () => {
  // No delivery of the endpoint has ended yet: its pace is not known.
  assert.equal(parkLimit(undefined, 4, 32), 4_096);
  // Four slots, 5 ms each: 800 deliveries a second.
  assert.equal(parkLimit(5, 4, 32), 800);
  // Slow (250 ms) or not answering (a request open for 3 s): the floor.
  assert.equal(parkLimit(250, 4, 32), 32);
  assert.equal(parkLimit(3_000, 4, 32), 32);
  // Faster than a millisecond counts as one; the cap holds however many slots.
  assert.equal(parkLimit(0.2, 4, 32), 4_000);
  assert.equal(parkLimit(1, 64, 512), 4_096);
});
