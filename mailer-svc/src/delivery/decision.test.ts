import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { decide, formatDuration } from './decision.ts';

const policy = { maxAttempts: 3, maxAgeMs: 3_600_000, baseMs: 1_000, maxMs: 10_000 };
const half = (): number => 0.5;
const young = (attempt: number) => ({ attempt, ageMs: 0 });

describe('delivery decision', () => {
  it('records an accepted message as sent and acknowledges the job', () => {
    assert.deepEqual(decide({ kind: 'accepted', smtpCode: 250, smtpResponse: '250 Ok' }, young(1), policy), {
      event: { state: 'sent', smtpCode: 250, smtpResponse: '250 Ok' },
      settle: { action: 'ack' },
    });
  });

  it('defers a temporary failure and offers the job again after the backoff', () => {
    const outcome = { kind: 'temporary', reason: 'recipient refused by the mail server: 451 later', smtpCode: 451, smtpResponse: '451 later' } as const;
    assert.deepEqual(decide(outcome, young(2), policy, half), {
      event: { state: 'deferred', reason: outcome.reason, smtpCode: 451, smtpResponse: '451 later' },
      settle: { action: 'nak', delayMs: 1_500 },
    });
  });

  it('fails the message once the last attempt is deferred too', () => {
    const decision = decide({ kind: 'temporary', reason: 'mail server unreachable (ESOCKET)' }, young(3), policy);
    assert.deepEqual(decision, { event: { state: 'failed', reason: 'retries exhausted: mail server unreachable (ESOCKET)' }, settle: { action: 'term' } });
    assert.equal(decide({ kind: 'temporary', reason: 'x' }, young(9), policy).event.state, 'failed');
  });

  it('fails a temporary failure of a delivery older than the maximum age, whatever attempts are left', () => {
    const decision = decide({ kind: 'temporary', reason: 'mail server timed out (ETIMEDOUT)' }, { attempt: 1, ageMs: 3_600_000 }, policy);
    assert.deepEqual(decision, { event: { state: 'failed', reason: 'gave up after 1h: mail server timed out (ETIMEDOUT)' }, settle: { action: 'term' } });
  });

  it('makes the last retry when the age limit is reached instead of overshooting it', () => {
    const decision = decide({ kind: 'temporary', reason: 'x' }, { attempt: 2, ageMs: 3_599_700 }, policy, half);
    assert.deepEqual(decision.settle, { action: 'nak', delayMs: 300 });
  });

  it('fails a permanent refusal at once, whatever the attempt', () => {
    const decision = decide({ kind: 'permanent', reason: 'recipient refused by the mail server: 550 no', smtpCode: 550, smtpResponse: '550 no' }, young(1), policy);
    assert.deepEqual(decision.event, { state: 'failed', reason: 'recipient refused by the mail server: 550 no', smtpCode: 550, smtpResponse: '550 no' });
    assert.deepEqual(decision.settle, { action: 'term' });
  });

  it('names a duration the way it is configured', () => {
    assert.deepEqual([formatDuration(345_600_000), formatDuration(5_400_000), formatDuration(3_000), formatDuration(1_500)], ['4d', '90m', '3s', '1500ms']);
  });
});
