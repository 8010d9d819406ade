import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { jobSender, messageIdFor, parseSender } from './mail-identity.ts';

describe('mail identity', () => {
  it('reads a display name and address from MAIL_FROM', () => {
    assert.deepEqual(parseSender('Notify <no-reply@Notify.Localhost>'), { name: 'Notify', address: 'no-reply@Notify.Localhost', domain: 'notify.localhost' });
  });

  it('accepts a bare address', () => {
    assert.equal(parseSender('mailer@example.com').domain, 'example.com');
  });

  it('refuses a list, a header injection and an address without a domain', () => {
    assert.throws(() => parseSender('a@example.com, b@example.com'), /exactly one mailbox/);
    assert.throws(() => parseSender('a@example.com\r\nBcc: x@evil.test'), /line breaks/);
    assert.throws(() => parseSender('Notify <nobody>'), /domain/);
  });

  it('takes a job’s sender as named, its domain in lower case for the Message-ID and the DKIM key', () => {
    const sender = jobSender({ address: 'Billing@Shop.Example', name: 'Shop, Billing' });
    assert.deepEqual(sender, { name: 'Shop, Billing', address: 'Billing@Shop.Example', domain: 'shop.example' });
    assert.equal(messageIdFor(7, sender), '<notify-7@shop.example>');
  });

  it('derives the same Message-ID for every attempt of a message', () => {
    const sender = parseSender('Notify <no-reply@notify.localhost>');
    assert.equal(messageIdFor(42, sender), '<notify-42@notify.localhost>');
    assert.equal(messageIdFor(42, sender), messageIdFor(42, sender));
  });
});
