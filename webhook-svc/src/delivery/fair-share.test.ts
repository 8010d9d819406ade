import assert from 'node:assert/strict';
import { test } from 'node:test';
import { FairShare, timeoutsBeforeSlowed } from './fair-share.ts';

test('a project holds at most its share of slots, whichever of its endpoints hold them, and may take one again once one is given back', () => {
  const share = new FairShare({ endpointConcurrency: 4, projectConcurrency: 3 });
  for (let taken = 0; taken < 3; taken += 1) {
    assert.equal(share.projectHasRoom(7), true);
    share.take(7);
  }
  assert.equal(share.projectHasRoom(7), false);
  assert.equal(share.projectHasRoom(8), true, 'another project is not held back');
  share.release(7);
  assert.equal(share.projectHasRoom(7), true);
});

test('an endpoint whose requests time out three times in a row may hold one slot until a request to it ends otherwise', () => {
  const share = new FairShare({ endpointConcurrency: 4, projectConcurrency: 16 });
  assert.equal(timeoutsBeforeSlowed, 3);
  assert.deepEqual([share.requestEnded(1, true), share.requestEnded(1, true)], [false, false]);
  assert.equal(share.endpointLimit(1), 4);
  // An answer (or a refused connection) ends the run: the timeouts must come in a row.
  share.requestEnded(1, false);
  assert.deepEqual(
    [share.requestEnded(1, true), share.requestEnded(1, true), share.requestEnded(1, true)],
    [false, false, true],
    'the third in a row slows it, once',
  );
  assert.equal(share.endpointLimit(1), 1);
  assert.equal(share.requestEnded(1, true), false);
  assert.equal(share.endpointLimit(2), 4, 'another endpoint keeps its share');
  share.requestEnded(1, false);
  assert.equal(share.endpointLimit(1), 4);
});

test("an endpoint's requests are split among the live replicas: its parts add up to its limit, and a slowed one keeps at most one per replica", () => {
  const replicas = 5;
  const shares = Array.from(
    { length: replicas },
    (_, rank) => new FairShare({ endpointConcurrency: 4, projectConcurrency: 16 }, () => ({ count: replicas, rank })),
  );
  const partsOf = (endpointId: number): number[] => shares.map((share) => share.endpointLimit(endpointId));
  for (const endpointId of [1, 2, 3, 10])
    assert.equal(
      partsOf(endpointId).reduce((sum, part) => sum + part, 0),
      4,
      `endpoint ${endpointId}: ${partsOf(endpointId)}`,
    );
  assert.notDeepEqual(partsOf(1), partsOf(2), 'the replica left without a part differs from endpoint to endpoint');
  const holder = partsOf(1).indexOf(1);
  const idle = partsOf(1).indexOf(0);
  for (const index of [holder, idle]) for (let timeout = 0; timeout < timeoutsBeforeSlowed; timeout += 1) shares[index]?.requestEnded(1, true);
  assert.deepEqual([shares[holder]?.endpointLimit(1), shares[idle]?.endpointLimit(1)], [1, 0], 'slowed: one, never more than its part');
});
