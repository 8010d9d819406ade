import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { decide } from './decision.ts';

const policy = { maxAttempts: 3, baseMs: 1_000, maxMs: 10_000 };
const half = (): number => 0.5;

describe('delivery decision', () => {
  it('records an accepted message as sent and acknowledges the job', () => {
    assert.deepEqual(decide({ kind: 'accepted', smtpCode: 250, smtpResponse: '250 Ok' }, 1, policy), {
      event: { state: 'sent', smtpCode: 250, smtpResponse: '250 Ok' },
      settle: { action: 'ack' },
    });
  });

  it('defers a temporary failure and offers the job again after the backoff', () => {
    const outcome = { kind: 'temporary', reason: 'recipient refused by the mail server: 451 later', smtpCode: 451, smtpResponse: '451 later' } as const;
    assert.deepEqual(decide(outcome, 2, policy, half), {
      event: { state: 'deferred', reason: outcome.reason, smtpCode: 451, smtpResponse: '451 later' },
      settle: { action: 'nak', delayMs: 1_000 },
    });
  });

  it('fails the message once the last attempt is deferred too', () => {
    const decision = decide({ kind: 'temporary', reason: 'mail server unreachable (ESOCKET)' }, 3, policy);
    assert.deepEqual(decision, { event: { state: 'failed', reason: 'retries exhausted: mail server unreachable (ESOCKET)' }, settle: { action: 'term' } });
    assert.equal(decide({ kind: 'temporary', reason: 'x' }, 9, policy).event.state, 'failed');
  });

  it('fails a permanent refusal at once, whatever the attempt', () => {
    const decision = decide({ kind: 'permanent', reason: 'recipient refused by the mail server: 550 no', smtpCode: 550, smtpResponse: '550 no' }, 1, policy);
    assert.deepEqual(decision.event, { state: 'failed', reason: 'recipient refused by the mail server: 550 no', smtpCode: 550, smtpResponse: '550 no' });
    assert.deepEqual(decision.settle, { action: 'term' });
  });
});
