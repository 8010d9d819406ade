import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { DeliveryJob } from '@notify/proto';
import { attemptBase, deliveryStart, parseJob } from './job.ts';

const job: DeliveryJob = {
  messageId: 7,
  celeryTaskId: '6f1c1b7e-3f0e-4e43-9d3e-1f1f6b0c2a11',
  projectId: 3,
  organizationId: 2,
  to: 'ana@example.com',
  data: { name: 'Ana' },
  template: { slug: 'welcome', version: 1, subject: 'Hi {{ name }}', html: '<p>{{ name }}</p>', text: '{{ name }}' },
  acceptedAt: '2025-01-01T00:00:00.000Z',
};
const encode = (value: unknown): Uint8Array => new TextEncoder().encode(JSON.stringify(value));

describe('delivery job parsing', () => {
  it('accepts a well-formed job', () => {
    assert.deepEqual(parseJob(encode(job)), { ok: true, job });
  });

  it('refuses bytes that are not JSON, without a message id', () => {
    assert.deepEqual(parseJob(new TextEncoder().encode('{nope')), { ok: false, reason: 'malformed job: not UTF-8 JSON' });
    assert.deepEqual(parseJob(Uint8Array.of(0xff, 0xfe)), { ok: false, reason: 'malformed job: not UTF-8 JSON' });
    assert.deepEqual(parseJob(encode([job])), { ok: false, reason: 'malformed job: not a JSON object' });
  });

  it('reads a job in full after refusing one cut off inside a character (the decoder is shared)', () => {
    const withEuro = { ...job, data: { price: '€5' } };
    const bytes = encode(withEuro);
    const cut = bytes.subarray(0, bytes.indexOf(0xe2) + 1);
    assert.deepEqual(parseJob(cut), { ok: false, reason: 'malformed job: not UTF-8 JSON' });
    assert.deepEqual(parseJob(bytes), { ok: true, job: withEuro });
  });

  it('names every invalid field and keeps the message id so the failure can be recorded', () => {
    const parsed = parseJob(encode({ ...job, to: 'a@example.com\r\nBcc: b@example.com', data: null, template: { slug: 'x' } }));
    assert.deepEqual(parsed, { ok: false, reason: 'malformed job: invalid to, data, template', messageId: 7 });
  });

  it('refuses a recipient list', () => {
    const parsed = parseJob(encode({ ...job, to: 'a@example.com, b@example.com' }));
    assert.equal(parsed.ok, false);
  });

  it('reads a re-queued delivery: attempts numbered after the base, age counted from the re-queueing', () => {
    const requeued = { ...job, requeue: { attemptBase: 4, at: '2025-02-01T00:00:00.000Z' } };
    const parsed = parseJob(encode(requeued));
    assert.deepEqual(parsed, { ok: true, job: requeued });
    assert.equal(parsed.ok && attemptBase(parsed.job), 4);
    assert.equal(parsed.ok && deliveryStart(parsed.job), Date.parse('2025-02-01T00:00:00.000Z'));
    assert.equal(attemptBase(job), 0);
    assert.equal(deliveryStart(job), Date.parse(job.acceptedAt));
  });

  it('refuses a re-queue marker without a valid base and time', () => {
    const parsed = parseJob(encode({ ...job, requeue: { attemptBase: 0, at: 'soon' } }));
    assert.deepEqual(parsed, { ok: false, reason: 'malformed job: invalid requeue', messageId: 7 });
  });
});
