import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { acceptedOutcome, classifySendError, enhancedStatus, isHardBounce } from './smtp-outcome.ts';

function smtpError(fields: Record<string, unknown>, message = 'failed'): Error {
  return Object.assign(new Error(message), fields);
}

describe('SMTP outcome', () => {
  it('reads the reply code of an accepted message', () => {
    assert.deepEqual(acceptedOutcome('250 2.0.0 Ok: queued as 4F2A1\r\n'), { kind: 'accepted', smtpCode: 250, smtpResponse: '250 2.0.0 Ok: queued as 4F2A1' });
  });

  it('keeps a reply without a code as text only', () => {
    assert.deepEqual(acceptedOutcome('Message accepted'), { kind: 'accepted', smtpResponse: 'Message accepted' });
  });

  it('treats a 4xx reply as temporary, with its code and text', () => {
    const outcome = classifySendError(smtpError({ code: 'EENVELOPE', responseCode: 451, response: '451 4.7.1 Greylisted, try later', command: 'RCPT TO' }));
    assert.deepEqual(outcome, {
      kind: 'temporary',
      reason: 'recipient refused by the mail server: 451 4.7.1 Greylisted, try later',
      smtpCode: 451,
      smtpResponse: '451 4.7.1 Greylisted, try later',
    });
  });

  it('treats a 5xx reply to the recipient or the message as permanent', () => {
    const recipient = classifySendError(smtpError({ code: 'EENVELOPE', responseCode: 550, response: '550 5.1.1 No such user', command: 'RCPT TO' }));
    assert.equal(recipient.kind, 'permanent');
    assert.equal(recipient.smtpCode, 550);
    const content = classifySendError(smtpError({ code: 'EMESSAGE', responseCode: 554, response: '554 5.7.1 Spam', command: 'DATA' }));
    assert.equal(content.kind, 'permanent');
    assert.match(content.kind === 'permanent' ? content.reason : '', /message refused/);
  });

  it('retries a 5xx that refuses the relay session rather than the message (bad credentials, greeting)', () => {
    const auth = classifySendError(smtpError({ code: 'EAUTH', responseCode: 535, response: '535 5.7.8 Authentication failed', command: 'AUTH PLAIN' }));
    assert.equal(auth.kind, 'temporary');
    assert.equal(auth.smtpCode, 535);
  });

  it('treats connection and timeout errors as temporary without leaking the host', () => {
    const refused = classifySendError(smtpError({ code: 'ESOCKET', originalCode: 'ECONNREFUSED', command: 'CONN' }, 'connect ECONNREFUSED 10.1.2.3:25'));
    assert.deepEqual(refused, { kind: 'temporary', reason: 'mail server unreachable (ECONNREFUSED)' });
    assert.deepEqual(classifySendError(smtpError({ code: 'ECONNECTION' })), { kind: 'temporary', reason: 'mail server unreachable (ECONNECTION)' });
    assert.equal(classifySendError(smtpError({ code: 'ETIMEDOUT' })).kind, 'temporary');
    assert.equal(classifySendError(new Error('something odd')).kind, 'temporary');
  });

  it('treats an envelope nodemailer itself refuses as permanent', () => {
    const outcome = classifySendError(smtpError({ code: 'EENVELOPE', command: 'API' }, 'Invalid recipient "x"'));
    assert.equal(outcome.kind, 'permanent');
  });

  it('flattens a multi-line reply', () => {
    const outcome = classifySendError(smtpError({ responseCode: 550, response: '550-5.7.1 First line\r\n550 5.7.1 Second line', command: 'RCPT TO' }));
    assert.equal(outcome.smtpResponse, '550-5.7.1 First line 550 5.7.1 Second line');
  });

  it('reads the RFC 3463 enhanced status a reply starts with, and nothing from a reply without one', () => {
    assert.equal(enhancedStatus('550 5.1.1 <ada@example.com>: Recipient address rejected'), '5.1.1');
    assert.equal(enhancedStatus('451-4.7.1 Greylisted'), '4.7.1');
    assert.equal(enhancedStatus('250 2.0.0 Ok: queued as 4F2A1'), '2.0.0');
    assert.equal(enhancedStatus('550 No such user 5.1.1'), undefined);
    assert.equal(enhancedStatus('550 5.1.1234 not a status'), undefined);
    assert.equal(enhancedStatus(undefined), undefined);
  });

  it('calls a hard bounce only a permanent 5xx whose enhanced status is about the recipient address (5.1.x)', () => {
    const refused = (response: string) =>
      classifySendError(smtpError({ code: 'EENVELOPE', responseCode: Number(response.slice(0, 3)), response, command: 'RCPT TO' }));
    assert.equal(isHardBounce(refused('550 5.1.1 No such user')), true);
    assert.equal(isHardBounce(refused('553 5.1.3 Bad destination mailbox address syntax')), true);
    assert.equal(isHardBounce(refused('550 5.7.1 Rejected by policy')), false, 'policy says nothing about the address');
    assert.equal(isHardBounce(refused('550 5.1.8 Bad sender address')), false, "the sender's address, not the recipient's");
    assert.equal(isHardBounce(refused('550 No such user')), false, 'without an enhanced status nothing is certain');
    assert.equal(isHardBounce(refused('450 4.1.1 Try later')), false);
  });
});
