import assert from 'node:assert/strict';
import { test } from 'node:test';
import { MalformedEventError, parseDeliveryEvent } from './delivery-event.ts';

const encode = (value: unknown): Uint8Array => new TextEncoder().encode(typeof value === 'string' ? value : JSON.stringify(value));
const valid = { messageId: 7, state: 'deferred', attempt: 2, occurredAt: '2025-01-02T03:04:05.678Z', smtpCode: 451, smtpResponse: '451 try later', reason: 'greylisted' };

test('a well-formed event is read with every field', () => {
  assert.deepEqual(parseDeliveryEvent(encode(valid)), valid);
});

test('optional fields may be absent or null', () => {
  const event = parseDeliveryEvent(encode({ messageId: 1, state: 'sending', attempt: 1, occurredAt: '2025-01-02T03:04:05Z', smtpCode: null, reason: null }));
  assert.deepEqual(event, { messageId: 1, state: 'sending', attempt: 1, occurredAt: '2025-01-02T03:04:05.000Z' });
});

test('a very long SMTP reply is cut to a readable length', () => {
  const event = parseDeliveryEvent(encode({ ...valid, smtpResponse: 'x'.repeat(10_000) }));
  assert.equal(event.smtpResponse?.length, 2_000);
});

test('anything that is not a delivery event is refused as malformed', () => {
  const cases: unknown[] = [
    'not json',
    '[1]',
    'null',
    { ...valid, messageId: 0 },
    { ...valid, messageId: '7' },
    { ...valid, state: 'queued' },
    { ...valid, state: 'delivered' },
    { ...valid, attempt: 0 },
    { ...valid, attempt: 1.5 },
    { ...valid, occurredAt: 'yesterday' },
    { ...valid, smtpCode: 42 },
    { ...valid, reason: 5 },
  ];
  for (const value of cases) {
    assert.throws(() => parseDeliveryEvent(encode(value)), MalformedEventError, JSON.stringify(value));
  }
  assert.throws(() => parseDeliveryEvent(new Uint8Array([0xff, 0xfe])), MalformedEventError);
});
