import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { failureReason, formatDuration, judgeAttempt } from './decision.ts';

const policy = { maxAttempts: 3, maxAgeMs: 3_600_000, baseMs: 1_000, maxMs: 10_000 };
const half = (): number => 0.5;
const young = (attempt: number) => ({ attempt, ageMs: 0 });

describe('delivery decision', () => {
  it('records an accepted message as sent and acknowledges the job', () => {
    assert.deepEqual(judgeAttempt({ kind: 'accepted', smtpCode: 250, smtpResponse: '250 Ok' }, young(1), policy), {
      event: { state: 'sent', smtpCode: 250, smtpResponse: '250 Ok' },
      settle: { action: 'ack' },
    });
  });

  it('defers a temporary failure and offers the job again after the backoff', () => {
    const outcome = { kind: 'temporary', reason: 'recipient refused by the mail server: 451 later', smtpCode: 451, smtpResponse: '451 later' } as const;
    assert.deepEqual(judgeAttempt(outcome, young(2), policy, half), {
      event: { state: 'deferred', reason: outcome.reason, smtpCode: 451, smtpResponse: '451 later' },
      settle: { action: 'nak', delayMs: 1_500 },
    });
  });

  it('fails the message once the last attempt is deferred too', () => {
    const decision = judgeAttempt({ kind: 'temporary', reason: 'mail server unreachable (ESOCKET)' }, young(3), policy);
    assert.deepEqual(decision, { event: { state: 'failed', reason: 'retries exhausted: mail server unreachable (ESOCKET)' }, settle: { action: 'term' } });
    assert.equal(judgeAttempt({ kind: 'temporary', reason: 'x' }, young(9), policy).event.state, 'failed');
  });

  it('fails a temporary failure of a delivery older than the maximum age, whatever attempts are left', () => {
    const decision = judgeAttempt({ kind: 'temporary', reason: 'mail server timed out (ETIMEDOUT)' }, { attempt: 1, ageMs: 3_600_000 }, policy);
    assert.deepEqual(decision, { event: { state: 'failed', reason: 'gave up after 1h: mail server timed out (ETIMEDOUT)' }, settle: { action: 'term' } });
  });

  it('makes the last retry when the age limit is reached instead of overshooting it', () => {
    const decision = judgeAttempt({ kind: 'temporary', reason: 'x' }, { attempt: 2, ageMs: 3_599_700 }, policy, half);
    assert.deepEqual(decision.settle, { action: 'nak', delayMs: 300 });
  });

  it('fails a permanent refusal at once, whatever the attempt', () => {
    const decision = judgeAttempt(
      { kind: 'permanent', reason: 'recipient refused by the mail server: 550 no', smtpCode: 550, smtpResponse: '550 no' },
      young(1),
      policy,
    );
    assert.deepEqual(decision.event, { state: 'failed', reason: 'recipient refused by the mail server: 550 no', smtpCode: 550, smtpResponse: '550 no' });
    assert.deepEqual(decision.settle, { action: 'term' });
  });

  it('marks a failure on a 5.1.x refusal as a hard bounce, for dispatch-svc to suppress the address', () => {
    const bounce = {
      kind: 'permanent',
      reason: 'recipient refused by the mail server: 550 5.1.1 No such user',
      smtpCode: 550,
      smtpResponse: '550 5.1.1 No such user',
    } as const;
    assert.deepEqual(judgeAttempt(bounce, young(1), policy).event, {
      state: 'failed',
      reason: bounce.reason,
      smtpCode: 550,
      smtpResponse: bounce.smtpResponse,
      suppression: 'hard_bounce',
    });
  });

  it('names a duration the way it is configured', () => {
    assert.deepEqual([formatDuration(345_600_000), formatDuration(5_400_000), formatDuration(3_000), formatDuration(1_500)], ['4d', '90m', '3s', '1500ms']);
  });
});

describe('failure reason', () => {
  const refused = { kind: 'permanent', reason: 'recipient refused by the mail server: 550 no', smtpCode: 550, smtpResponse: '550 no' } as const;
  const later = { kind: 'temporary', reason: 'mail server unreachable (ESOCKET)' } as const;

  it('names why a message failed with one of a fixed set of labels, never the text of the reason', () => {
    assert.equal(failureReason(refused, young(1), policy), 'rejected');
    assert.equal(failureReason({ kind: 'permanent', reason: 'message not sendable: EENVELOPE' }, young(1), policy), 'rejected');
    assert.equal(failureReason({ kind: 'permanent', reason: 'undefined variable: name, line:1, col:7' }, young(1), policy, 'render'), 'render_failed');
    assert.equal(failureReason(later, young(3), policy), 'retries_exhausted');
    assert.equal(failureReason(later, { attempt: 1, ageMs: 3_600_000 }, policy), 'too_old');
    assert.equal(
      failureReason(later, { attempt: 3, ageMs: 3_600_000 }, policy),
      'retries_exhausted',
      'the attempt limit is judged first, as judgeAttempt does',
    );
  });

  it('names none for an attempt that does not fail the message', () => {
    assert.equal(failureReason({ kind: 'accepted', smtpCode: 250, smtpResponse: '250 Ok' }, young(1), policy), undefined);
    assert.equal(failureReason({ kind: 'accepted', smtpCode: 250, smtpResponse: '250 Ok' }, young(1), policy, 'render'), undefined);
    assert.equal(failureReason(later, young(2), policy), undefined);
    assert.equal(failureReason(later, { attempt: 2, ageMs: 3_599_999 }, policy), undefined);
  });

  it('names a reason exactly when judgeAttempt fails the message, and the reason its event states', () => {
    const outcomes = [refused, later, { kind: 'accepted', smtpResponse: '250 Ok' } as const];
    for (const outcome of outcomes) {
      for (const attempt of [1, 2, 3, 4]) {
        for (const ageMs of [0, 3_599_999, 3_600_000, 7_200_000]) {
          const context = { attempt, ageMs };
          const decision = judgeAttempt(outcome, context, policy, half);
          const reason = failureReason(outcome, context, policy);
          const where = `${outcome.kind}, attempt ${attempt}, ${ageMs} ms`;
          assert.equal(reason !== undefined, decision.event.state === 'failed', where);
          if (reason === 'retries_exhausted') assert.match(decision.event.reason ?? '', /^retries exhausted: /, where);
          if (reason === 'too_old') assert.match(decision.event.reason ?? '', /^gave up after 1h: /, where);
          if (reason === 'rejected') assert.equal(decision.event.reason, refused.reason, where);
        }
      }
    }
  });
});
