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
