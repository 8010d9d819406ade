import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import type { DeliveryEvent } from '@notify/proto';
import { advance, compareLifecycle, isCancelable, isTerminal, type MessageProgress, reopen, reportEffect } from './state-machine.ts';

const queued: MessageProgress = { state: 'queued', stateAttempt: 0, attempts: 0, lastSmtpCode: null, lastSmtpResponse: null, failureReason: null };

type Facts = Pick<DeliveryEvent, 'state' | 'attempt' | 'smtpCode' | 'smtpResponse' | 'reason'>;

/** Applies events in the order given, as the event store would, and returns the final progress. */
function run(events: Facts[], start: MessageProgress = queued): MessageProgress {
  return events.reduce((current, event) => {
    const decision = advance(current, event);
    return decision.apply ? decision.next : current;
  }, start);
}

const sending = (attempt: number): Facts => ({ state: 'sending', attempt });
const deferred = (attempt: number, reason = 'mailbox busy'): Facts => ({
  state: 'deferred',
  attempt,
  smtpCode: 451,
  smtpResponse: '451 4.3.0 try later',
  reason,
});
const sent = (attempt: number): Facts => ({ state: 'sent', attempt, smtpCode: 250, smtpResponse: '250 2.0.0 queued' });
const failed = (attempt: number): Facts => ({ state: 'failed', attempt, smtpCode: 550, smtpResponse: '550 5.1.1 no such user', reason: 'recipient rejected' });

describe('forward moves', () => {
  test('a queued message moves to sending on its first attempt', () => {
    const decision = advance(queued, sending(1));
    assert.equal(decision.apply, true);
    assert.deepEqual(decision.apply && decision.next, { ...queued, state: 'sending', stateAttempt: 1, attempts: 1 });
  });

  test('a successful delivery records the SMTP reply and ends in sent', () => {
    const final = run([sending(1), sent(1)]);
    assert.equal(final.state, 'sent');
    assert.equal(final.lastSmtpCode, 250);
    assert.equal(final.lastSmtpResponse, '250 2.0.0 queued');
    assert.equal(final.attempts, 1);
  });

  test('deferred, sending and sent cycles across attempts end in sent with the attempt count', () => {
    const final = run([sending(1), deferred(1), sending(2), deferred(2), sending(3), sent(3)]);
    assert.equal(final.state, 'sent');
    assert.equal(final.stateAttempt, 3);
    assert.equal(final.attempts, 3);
    assert.equal(final.failureReason, null, 'a delivered message carries no failure reason');
  });

  test('a retry keeps the reply and reason of the deferral before it', () => {
    const final = run([sending(1), deferred(1, 'greylisted'), sending(2)]);
    assert.equal(final.state, 'sending');
    assert.equal(final.lastSmtpCode, 451);
    assert.equal(final.failureReason, 'greylisted');
  });

  test('a permanent failure ends in failed with its reason', () => {
    const final = run([sending(1), failed(1)]);
    assert.equal(final.state, 'failed');
    assert.equal(final.failureReason, 'recipient rejected');
    assert.equal(final.lastSmtpCode, 550);
  });

  test('an event may skip states it follows: deferred straight from queued', () => {
    const final = run([deferred(1)]);
    assert.equal(final.state, 'deferred');
    assert.equal(final.stateAttempt, 1);
  });
});

describe('duplicates and late events', () => {
  test('the same event twice applies once', () => {
    const once = run([sending(1)]);
    assert.deepEqual(advance(once, sending(1)), { apply: false, why: 'stale' });
  });

  test('a sending that arrives after its own deferral does not move the message back', () => {
    const final = run([deferred(1), sending(1)]);
    assert.equal(final.state, 'deferred');
  });

  test('an event of an earlier attempt does not move the message back', () => {
    const current = run([sending(1), deferred(1), sending(2)]);
    assert.deepEqual(advance(current, deferred(1)), { apply: false, why: 'stale' });
    assert.deepEqual(advance(current, sending(1)), { apply: false, why: 'stale' });
  });

  test('out-of-order arrival ends in the same state as in-order arrival', () => {
    const inOrder = [sending(1), deferred(1), sending(2), sent(2)];
    const shuffled = [sent(2), sending(1), sending(2), deferred(1)];
    assert.deepEqual(run(shuffled), run(inOrder));
  });

  test('every permutation of one attempt ends in its terminal state', () => {
    const events = [sending(1), deferred(1), sending(2), failed(2)];
    const permutations = (items: Facts[]): Facts[][] =>
      items.length <= 1 ? [items] : items.flatMap((item, index) => permutations(items.filter((_, other) => other !== index)).map((rest) => [item, ...rest]));
    for (const order of permutations(events)) {
      const final = run(order);
      assert.equal(final.state, 'failed', JSON.stringify(order.map((event) => `${event.state}:${event.attempt}`)));
      assert.equal(final.stateAttempt, 2);
    }
  });
});

describe('lifecycle order', () => {
  test('orders events by attempt, then by state within an attempt', () => {
    const shuffled = [sent(2), deferred(1), sending(2), sending(1)];
    assert.deepEqual([...shuffled].sort(compareLifecycle), [sending(1), deferred(1), sending(2), sent(2)]);
  });

  test('events sorted in lifecycle order each move the message, and end it as in-order arrival does', () => {
    const inOrder = [sending(1), deferred(1, 'greylisted'), sending(2), sent(2)];
    const sorted = [sent(2), sending(2), deferred(1, 'greylisted'), sending(1)].sort(compareLifecycle);
    let current = queued;
    for (const event of sorted) {
      const decision = advance(current, event);
      assert.equal(decision.apply, true, `${event.state}:${event.attempt}`);
      if (decision.apply) current = decision.next;
    }
    assert.deepEqual(current, run(inOrder));
  });

  test('sent and failed of one attempt are equal: the one taken first is final', () => {
    assert.equal(compareLifecycle(sent(1), failed(1)), 0);
    assert.equal(run([sending(1), failed(1), sent(1)]).state, 'failed');
  });
});

describe('terminal states', () => {
  test('sent and failed are terminal, the others are not', () => {
    assert.deepEqual((['queued', 'sending', 'deferred', 'sent', 'failed'] as const).map(isTerminal), [false, false, false, true, true]);
  });

  test('bounced and complained are terminal too: no delivery event moves a message out of them', () => {
    assert.deepEqual((['bounced', 'complained'] as const).map(isTerminal), [true, true]);
    const bounced: MessageProgress = { ...queued, state: 'bounced', stateAttempt: 1, attempts: 1 };
    assert.deepEqual(advance(bounced, { state: 'sent', attempt: 2 }), { apply: false, why: 'terminal' });
  });

  test('a report moves only a sent message; one still on its way is early; a reported or failed one stays', () => {
    assert.deepEqual((['queued', 'sending', 'deferred', 'sent', 'failed', 'bounced', 'complained'] as const).map(reportEffect), [
      'early',
      'early',
      'early',
      'move',
      'done',
      'done',
      'done',
    ]);
  });

  test('a sent message never changes, even for a later attempt', () => {
    const current = run([sending(1), sent(1)]);
    assert.deepEqual(advance(current, sending(2)), { apply: false, why: 'terminal' });
    assert.deepEqual(advance(current, failed(1)), { apply: false, why: 'terminal' });
    assert.deepEqual(advance(current, failed(5)), { apply: false, why: 'terminal' });
  });

  test('a failed message never changes, even to sent', () => {
    const current = run([sending(1), failed(1)]);
    assert.deepEqual(advance(current, sent(1)), { apply: false, why: 'terminal' });
    assert.deepEqual(advance(current, sent(2)), { apply: false, why: 'terminal' });
  });
});

describe('re-queueing a dead letter', () => {
  const failedAt2 = run([sending(1), deferred(1), sending(2), failed(2)]);

  test('reopens a failed message as queued after its last attempt, keeping the reply and dropping the reason', () => {
    const reopened = reopen(failedAt2, 2);
    assert.deepEqual(reopened, { ...failedAt2, state: 'queued', stateAttempt: 2, failureReason: null });
  });

  test('only a failed message can be re-queued', () => {
    for (const current of [queued, run([sending(1)]), run([sending(1), deferred(1)]), run([sending(1), sent(1)])]) {
      assert.equal(reopen(current, current.stateAttempt), undefined, current.state);
    }
  });

  test('events of the earlier delivery never move a re-queued message, whatever their order', () => {
    const reopened = reopen(failedAt2, 2);
    assert.ok(reopened);
    for (const late of [sending(1), deferred(1), sending(2), failed(2), sent(2), sent(1)]) {
      assert.deepEqual(advance(reopened, late), { apply: false, why: 'stale' }, `${late.state}:${late.attempt}`);
    }
  });

  test('the new delivery moves it forward from its first attempt, and a late old event cannot undo that', () => {
    const reopened = reopen(failedAt2, 2);
    assert.ok(reopened);
    const final = run([sending(3), failed(2), sent(3), deferred(1)], reopened);
    assert.equal(final.state, 'sent');
    assert.equal(final.stateAttempt, 3);
    assert.equal(final.attempts, 3);
    assert.equal(final.failureReason, null);
  });

  test('a message re-queued twice takes only the attempts of its latest delivery', () => {
    const first = reopen(failedAt2, 2);
    assert.ok(first);
    const failedAgain = run([sending(3), failed(3)], first);
    const second = reopen(failedAgain, 3);
    assert.ok(second);
    assert.deepEqual(advance(second, failed(3)), { apply: false, why: 'stale' });
    assert.equal(run([sending(4), sent(4)], second).state, 'sent');
  });
});

describe('scheduled sends', () => {
  test('only a scheduled message can be canceled', () => {
    assert.equal(isCancelable('scheduled'), true);
    for (const state of ['queued', 'sending', 'deferred', 'sent', 'failed', 'bounced', 'complained', 'canceled'] as const)
      assert.equal(isCancelable(state), false, state);
  });

  test('a canceled message is terminal: no delivery event moves it', () => {
    const canceled: MessageProgress = { ...queued, state: 'canceled' };
    assert.equal(isTerminal('canceled'), true);
    assert.deepEqual(advance(canceled, sending(1)), { apply: false, why: 'terminal' });
  });

  test('a report about a canceled message changes nothing, and one about a scheduled message is early', () => {
    assert.equal(reportEffect('canceled'), 'done');
    assert.equal(reportEffect('scheduled'), 'early');
  });

  test('a scheduled step sorts before the queued step of the same attempt, a canceled one after every delivery step', () => {
    assert.ok(compareLifecycle({ state: 'scheduled', attempt: 0 }, { state: 'queued', attempt: 0 }) < 0);
    assert.ok(compareLifecycle({ state: 'canceled', attempt: 0 }, { state: 'scheduled', attempt: 0 }) > 0);
  });
});
