import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import protobuf from 'protobufjs';
import {
  type DeliveryEvent,
  type DeliveryJob,
  deliveryJobId,
  deliveryStates,
  encodeDeliveryEvent,
  encodeDeliveryEventBatch,
  encodeDeliveryJob,
  encodeKeyAnnouncement,
  encodeWebhookDelivery,
  readDeliveryEvent,
  readDeliveryJob,
  readEventsMessage,
  readKeyAnnouncement,
  readWebhookDelivery,
  webhookDeliveryId,
} from './messaging.ts';

const job: DeliveryJob = {
  messageId: 7,
  celeryTaskId: '6f1c1b7e-3f0e-4e43-9d3e-1f1f6b0c2a11',
  projectId: 3,
  organizationId: 2,
  to: 'ana@example.com',
  data: { name: 'Ana', price: '€5', nested: { list: [1, null, true] } },
  template: { slug: 'welcome', version: 1, subject: 'Hi {{ name }}', html: '<p>{{ name }}</p>', text: '{{ name }}', unsubscribe: true },
  acceptedAt: '2025-01-01T00:00:00.000Z',
};
const event: DeliveryEvent = {
  messageId: 7,
  state: 'deferred',
  attempt: 2,
  occurredAt: '2025-01-02T03:04:05.678Z',
  smtpCode: 451,
  smtpResponse: '451 try later',
  reason: 'greylisted',
};
const json = (value: unknown): Uint8Array => new TextEncoder().encode(typeof value === 'string' ? value : JSON.stringify(value));

/**
 * The v1 messages as a later release might write them: a field this release does not know, on the job and on the event.
 * Parsed from text so the test does not depend on this release's .proto.
 */
const newer = protobuf.parse(`
  syntax = "proto3";
  package notify.messaging.v1;
  message TemplateSnapshot { string slug = 1; int32 version = 2; string subject = 3; string html = 4; string text = 5; bool unsubscribe = 6; }
  message DeliveryJob {
    int64 message_id = 1; string celery_task_id = 2; int64 project_id = 3; int64 organization_id = 4; string to = 5;
    string data_json = 6; TemplateSnapshot template = 7; string accepted_at = 8;
    repeated string tags = 40;
  }
  message DeliveryEvent { int64 message_id = 1; string state = 2; int32 attempt = 3; string occurred_at = 4; string webhook_id = 41; }
`).root;
const newerJob = (fields: Record<string, unknown>): Uint8Array => {
  const type = newer.lookupType('notify.messaging.v1.DeliveryJob');
  return type.encode(type.fromObject(fields)).finish();
};
const v1Job = { ...job, dataJson: JSON.stringify(job.data) };

describe('delivery jobs', () => {
  it('read back exactly as encoded, the header naming the versioned type', () => {
    const message = encodeDeliveryJob(job);
    assert.equal(message.schema, 'notify.messaging.v1.DeliveryJob');
    assert.deepEqual(readDeliveryJob(message.bytes, message.schema), { ok: true, value: job });
  });

  it('carry a re-queue only on a re-queued delivery, which its Nats-Msg-Id tells apart', () => {
    const requeued: DeliveryJob = { ...job, requeue: { attemptBase: 4, at: '2025-02-01T00:00:00.000Z' } };
    const message = encodeDeliveryJob(requeued);
    assert.deepEqual(readDeliveryJob(message.bytes, message.schema), { ok: true, value: requeued });
    // By celery_task_id, not by message id: a database created again hands the ids out anew.
    assert.equal(deliveryJobId(job), job.celeryTaskId);
    assert.equal(deliveryJobId(requeued), `${job.celeryTaskId}:requeue:4`);
  });

  it("carry the test mark only on a test key's job", () => {
    const test: DeliveryJob = { ...job, test: true };
    const message = encodeDeliveryJob(test);
    assert.deepEqual(readDeliveryJob(message.bytes, message.schema), { ok: true, value: test });
    assert.equal('test' in (readDeliveryJob(encodeDeliveryJob(job).bytes, message.schema) as { value: DeliveryJob }).value, false);
  });

  it('tolerate a field a newer writer added', () => {
    const bytes = newerJob({ ...v1Job, tags: ['billing', 'eu'] });
    assert.deepEqual(readDeliveryJob(bytes, 'notify.messaging.v1.DeliveryJob'), { ok: true, value: job });
  });

  it('are refused, naming each missing or invalid field and keeping the message id, when a required field is absent', () => {
    const { to: _to, template: _template, ...withoutRecipientAndTemplate } = v1Job;
    const read = readDeliveryJob(newerJob(withoutRecipientAndTemplate), 'notify.messaging.v1.DeliveryJob');
    assert.deepEqual(read, { ok: false, reason: 'malformed job: invalid to, template', messageId: 7 });
    assert.deepEqual(readDeliveryJob(newerJob({ ...v1Job, messageId: 0 }), 'notify.messaging.v1.DeliveryJob'), {
      ok: false,
      reason: 'malformed job: invalid messageId',
    });
    assert.deepEqual(readDeliveryJob(newerJob({ ...v1Job, dataJson: '[1]' }), 'notify.messaging.v1.DeliveryJob'), {
      ok: false,
      reason: 'malformed job: invalid data',
      messageId: 7,
    });
  });

  it('refuse a recipient list or header injection', () => {
    for (const to of ['a@example.com, b@example.com', 'a@example.com\r\nBcc: b@example.com']) {
      const message = encodeDeliveryJob({ ...job, to });
      assert.equal(readDeliveryJob(message.bytes, message.schema).ok, false, to);
    }
  });

  it('are refused when of a schema this release does not read, or not protobuf at all', () => {
    const message = encodeDeliveryJob(job);
    assert.deepEqual(readDeliveryJob(message.bytes, 'notify.messaging.v2.DeliveryJob'), {
      ok: false,
      reason: 'malformed job: schema notify.messaging.v2.DeliveryJob is not notify.messaging.v1.DeliveryJob',
    });
    assert.deepEqual(readDeliveryJob(Uint8Array.of(0xff, 0xff, 0xff), message.schema), {
      ok: false,
      reason: 'malformed job: not a notify.messaging.v1.DeliveryJob',
    });
  });

  it('are refused without the schema header, whatever the bytes', () => {
    const message = encodeDeliveryJob(job);
    const refusal = { ok: false, reason: 'malformed job: schema (none) is not notify.messaging.v1.DeliveryJob' };
    assert.deepEqual(readDeliveryJob(message.bytes, undefined), refusal);
    assert.deepEqual(readDeliveryJob(json(job), undefined), refusal);
  });
});

describe('delivery events', () => {
  it('read back exactly as encoded, optional fields absent when not given', () => {
    const message = encodeDeliveryEvent(event);
    assert.equal(message.schema, 'notify.messaging.v1.DeliveryEvent');
    assert.deepEqual(readDeliveryEvent(message.bytes, message.schema), { ok: true, value: event });
    const sending: DeliveryEvent = { messageId: 1, state: 'sending', attempt: 1, occurredAt: '2025-01-02T03:04:05.000Z' };
    const bare = encodeDeliveryEvent(sending);
    assert.deepEqual(readDeliveryEvent(bare.bytes, bare.schema), { ok: true, value: sending });
  });

  it('carry a hard bounce only on a failed event', () => {
    const bounced: DeliveryEvent = {
      messageId: 7,
      state: 'failed',
      attempt: 1,
      occurredAt: '2025-01-02T03:04:05.000Z',
      smtpCode: 550,
      smtpResponse: '550 5.1.1 No such user',
      suppression: 'hard_bounce',
    };
    const message = encodeDeliveryEvent(bounced);
    assert.deepEqual(readDeliveryEvent(message.bytes, message.schema), { ok: true, value: bounced });
    const onSent = encodeDeliveryEvent({ ...bounced, state: 'sent' });
    assert.deepEqual(readDeliveryEvent(onSent.bytes, onSent.schema), { ok: false, reason: 'malformed event: invalid suppression', messageId: 7 });
    const unknown = encodeDeliveryEvent({ ...bounced, suppression: 'soft_bounce' as never });
    assert.equal(readDeliveryEvent(unknown.bytes, unknown.schema).ok, false);
  });

  it('tolerate a field a newer writer added', () => {
    const type = newer.lookupType('notify.messaging.v1.DeliveryEvent');
    const bytes = type.encode(type.fromObject({ messageId: 1, state: 'sent', attempt: 1, occurredAt: '2025-01-02T03:04:05.000Z', webhookId: 'wh_1' })).finish();
    assert.deepEqual(readDeliveryEvent(bytes, 'notify.messaging.v1.DeliveryEvent'), {
      ok: true,
      value: { messageId: 1, state: 'sent', attempt: 1, occurredAt: '2025-01-02T03:04:05.000Z' },
    });
  });

  it('cut a very long SMTP reply to a readable length', () => {
    const message = encodeDeliveryEvent({ ...event, smtpResponse: 'x'.repeat(10_000) });
    const read = readDeliveryEvent(message.bytes, message.schema);
    assert.equal(read.ok && read.value.smtpResponse?.length, 2_000);
  });

  it('refuse anything that is not a delivery event, naming what is wrong', () => {
    const cases: Array<[Partial<DeliveryEvent> & Record<string, unknown>, string]> = [
      [{ ...event, messageId: 0 }, 'messageId'],
      [{ ...event, state: 'queued' as never }, 'state'],
      [{ ...event, attempt: 0 }, 'attempt'],
      [{ ...event, occurredAt: 'yesterday' }, 'occurredAt'],
      [{ ...event, smtpCode: 42 }, 'smtpCode'],
    ];
    for (const [value, field] of cases) {
      const message = encodeDeliveryEvent(value as DeliveryEvent);
      const read = readDeliveryEvent(message.bytes, message.schema);
      assert.equal(read.ok, false, field);
      assert.match(!read.ok ? read.reason : '', new RegExp(`invalid ${field}`), field);
    }
  });

  it('travel in a batch with the traceparent of each, read each on its own', () => {
    const traceparent = '00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01';
    const sending: DeliveryEvent = { messageId: 1, state: 'sending', attempt: 1, occurredAt: '2025-01-02T03:04:05.000Z' };
    const batch = encodeDeliveryEventBatch([
      { event, traceparent },
      { event: sending, traceparent: '' },
      { event: { ...sending, attempt: 0 }, traceparent },
    ]);
    assert.equal(batch.schema, 'notify.messaging.v1.DeliveryEventBatch');
    assert.deepEqual(readEventsMessage(batch.bytes, batch.schema), {
      ok: true,
      value: [
        { ok: true, value: event, traceparent },
        { ok: true, value: sending },
        { ok: false, reason: 'malformed event: invalid attempt', messageId: 1, traceparent },
      ],
    });
    // A single event reads as a list of one, without a traceparent (its header carries it).
    const single = encodeDeliveryEvent(event);
    assert.deepEqual(readEventsMessage(single.bytes, single.schema), { ok: true, value: [{ ok: true, value: event }] });
    assert.deepEqual(readEventsMessage(encodeDeliveryEventBatch([]).bytes, batch.schema), { ok: false, reason: 'malformed event batch: no events' });
    assert.deepEqual(readEventsMessage(json(event), undefined), {
      ok: false,
      reason: 'malformed event: schema (none) is not notify.messaging.v1.DeliveryEvent',
    });
  });

  it('travel in a batch with long SMTP replies cut as a reader cuts them, so 128 events stay under 1 MiB', () => {
    const long: DeliveryEvent = { ...event, state: 'deferred', smtpResponse: 'r'.repeat(100_000), reason: 'x'.repeat(100_000) };
    const batch = encodeDeliveryEventBatch(Array.from({ length: 128 }, () => ({ event: long, traceparent: '' })));
    assert.ok(batch.bytes.length < 1_048_576, `${batch.bytes.length} bytes`);
    const read = readEventsMessage(batch.bytes, batch.schema);
    assert.ok(read.ok && read.value[0]?.ok);
    assert.equal(read.value[0].value.smtpResponse?.length, 2_000);
    assert.equal(read.value[0].value.reason?.length, 2_000);
  });

  it('are refused without the schema header, whatever the bytes', () => {
    const message = encodeDeliveryEvent(event);
    const refusal = { ok: false, reason: 'malformed event: schema (none) is not notify.messaging.v1.DeliveryEvent' };
    assert.deepEqual(readDeliveryEvent(message.bytes, undefined), refusal);
    assert.deepEqual(readDeliveryEvent(json(event), undefined), refusal);
  });

  it('carry a state of the DeliveryState enum of messaging.proto, by its name', () => {
    assert.deepEqual(deliveryStates, ['sending', 'deferred', 'sent', 'failed']);
    for (const state of deliveryStates) {
      const message = encodeDeliveryEvent({ ...event, state });
      const read = readDeliveryEvent(message.bytes, message.schema);
      assert.equal(read.ok && read.value.state, state);
    }
    const unspecified = encodeDeliveryEvent({ ...event, state: 'DELIVERY_STATE_UNSPECIFIED' as never });
    assert.deepEqual(readDeliveryEvent(unspecified.bytes, unspecified.schema), { ok: false, reason: 'malformed event: invalid state', messageId: 7 });
  });
});

describe('key announcements', () => {
  it('name one key prefix or every key', () => {
    for (const target of [{ keyPrefix: 'nk_0123456789abcdef' }, { everyKey: true as const }]) {
      const message = encodeKeyAnnouncement(target);
      assert.equal(message.schema, 'notify.messaging.v1.KeyAnnouncement');
      assert.deepEqual(readKeyAnnouncement(message.bytes, message.schema), target);
    }
  });

  it('that cannot be read name nothing (their readers then forget every key)', () => {
    assert.equal(readKeyAnnouncement(json('nk_0123456789abcdef'), undefined), undefined);
    assert.equal(readKeyAnnouncement(Uint8Array.of(), 'notify.messaging.v1.KeyAnnouncement'), undefined);
    assert.equal(readKeyAnnouncement(Uint8Array.of(0xff, 0xff), 'notify.messaging.v1.KeyAnnouncement'), undefined);
  });
});

describe('webhook deliveries', () => {
  it('name one event and one endpoint, and are published once per generation of attempts', () => {
    const message = encodeWebhookDelivery({ eventId: 42, endpointId: 3 });
    assert.equal(message.schema, 'notify.messaging.v1.WebhookDelivery');
    assert.deepEqual(readWebhookDelivery(message.bytes, message.schema), { ok: true, value: { eventId: 42, endpointId: 3 } });
    assert.equal(webhookDeliveryId({ eventId: 42, endpointId: 3 }, 0), 'evt_42:3:0');
    assert.notEqual(webhookDeliveryId({ eventId: 42, endpointId: 3 }, 2), webhookDeliveryId({ eventId: 42, endpointId: 3 }, 0));
  });

  it('without the schema header or with a missing id are refused', () => {
    const message = encodeWebhookDelivery({ eventId: 42, endpointId: 3 });
    assert.deepEqual(readWebhookDelivery(message.bytes, undefined), {
      ok: false,
      reason: 'malformed webhook delivery: schema (none) is not notify.messaging.v1.WebhookDelivery',
    });
    const missing = encodeWebhookDelivery({ eventId: 42, endpointId: 0 });
    assert.deepEqual(readWebhookDelivery(missing.bytes, missing.schema), { ok: false, reason: 'malformed webhook delivery: invalid endpointId' });
  });
});
