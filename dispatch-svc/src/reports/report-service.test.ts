// ReportService against a real database: bounce and complaint reports move `sent` messages on, unsubscribe tokens
// suppress their address, each with its webhook event, once.
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { after, before, describe, test } from 'node:test';
import { status } from '@grpc/grpc-js';
import { GrpcClient } from '@notify/platform';
import { createDataKey, unsubscribeToken } from '@notify/platform/mail';
import { dispatchProto } from '@notify/proto';
import { assertRefused } from '@notify/test/harness/refusal.ts';
import { applyDeliveryEvent } from '../events/event-store.ts';
import { type Harness, startHarness } from '../testing/harness.ts';
import { updateDeliverabilityGauges } from './deliverability.ts';
import { maskAddress } from './report-service.ts';

let h: Harness;
let reports: GrpcClient<typeof dispatchProto.ReportService.service>;

before(async () => {
  h = await startHarness();
  reports = new GrpcClient(dispatchProto.ReportService.service, h.address, { token: h.callers.bounce.token, deadlineMs: 5_000 });
  await h.admin.call('PutTemplate', { projectId: h.ids.projectId, slug: 'welcome', subject: 'Hi', text: 'Hi', active: true });
  await h.pool.query(
    `INSERT INTO webhook_endpoints (project_id, organization_id, url, event_types, secret) VALUES ($1, $2, 'https://hooks.example.com/', $3, 'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw')`,
    [h.ids.projectId, h.ids.organizationId, ['message.sent', 'message.bounced', 'message.complained', 'message.unsubscribed']],
  );
});

after(async () => {
  reports?.close();
  await h?.close();
});

/** A message to `to`, delivered (`sent`) unless `until` says how far it got. */
async function message(to: string, until: 'queued' | 'sent' = 'sent'): Promise<number> {
  const { messageId } = await h.dispatch.call('Send', {
    projectId: h.ids.projectId,
    organizationId: h.ids.organizationId,
    apiKeyId: h.ids.apiKeyId,
    template: 'welcome',
    to,
    dataJson: '{}',
    idempotencyKey: '',
    fingerprint: '',
  });
  if (until === 'sent') {
    const occurredAt = new Date().toISOString();
    await applyDeliveryEvent(h.pool, { messageId, state: 'sending', attempt: 1, occurredAt });
    await applyDeliveryEvent(h.pool, { messageId, state: 'sent', attempt: 1, occurredAt, smtpCode: 250, smtpResponse: '250 2.0.0 Ok' });
  }
  return messageId;
}

const row = async (messageId: number) =>
  (await h.pool.query<{ state: string; failure_reason: string | null }>('SELECT state, failure_reason FROM messages WHERE id = $1', [messageId])).rows[0];
const events = async (messageId: number) =>
  (
    await h.pool.query<{ state: string; attempt: number; smtp_code: number | null; reason: string | null }>(
      'SELECT state, attempt, smtp_code, reason FROM message_events WHERE message_id = $1 ORDER BY id',
      [messageId],
    )
  ).rows;
const webhookEvents = async (messageId: number) =>
  (
    await h.pool.query<{ type: string; sequence: number; payload: { type: string; data: Record<string, unknown> } }>(
      'SELECT type, sequence, payload FROM webhook_events WHERE message_id = $1 ORDER BY sequence',
      [messageId],
    )
  ).rows;
const suppression = async (address: string) =>
  (
    await h.pool.query<{ reason: string; message_id: number | null }>('SELECT reason, message_id FROM suppressions WHERE project_id = $1 AND address = $2', [
      h.ids.projectId,
      address,
    ])
  ).rows[0];
const metric = async (name: string, labels: Record<string, string>): Promise<number | undefined> => {
  const values = (await h.registry.getSingleMetric(name)?.get())?.values ?? [];
  return values.find((each) => Object.entries(labels).every(([label, value]) => each.labels[label] === value))?.value;
};

// Received an hour ago: inside the deliverability gauges' last day whenever the suite runs.
const hardBounce = {
  kind: 'bounced',
  suppression: 'hard_bounce',
  detail: '5.1.1 smtp; 550 5.1.1 <gone@example.org>: user unknown',
  smtpCode: 550,
  receivedAt: new Date(Date.now() - 3_600_000).toISOString(),
};

describe('ApplyReport', () => {
  test('a hard bounce moves a sent message to bounced, records the event, suppresses the address and writes the webhook event', async () => {
    const id = await message('Gone@Example.ORG');
    const before = (await metric('notify_suppressions_total', { reason: 'hard_bounce' })) ?? 0;
    assert.deepEqual(await reports.call('ApplyReport', { messageId: id, ...hardBounce }), { state: 'bounced', changed: true });
    assert.deepEqual(await row(id), { state: 'bounced', failure_reason: hardBounce.detail });
    assert.deepEqual((await events(id)).at(-1), { state: 'bounced', attempt: 1, smtp_code: 550, reason: hardBounce.detail });
    assert.deepEqual(await suppression('Gone@example.org'), { reason: 'hard_bounce', message_id: id });
    const webhooks = await webhookEvents(id);
    assert.deepEqual(
      webhooks.map((each) => [each.type, each.sequence]),
      [
        ['message.sent', 1],
        ['message.bounced', 2],
      ],
    );
    assert.deepEqual(webhooks[1]?.payload.data, {
      message_id: id,
      status: 'bounced',
      to: 'Gone@Example.ORG',
      template: 'welcome',
      attempt: 1,
      smtp_reply: '550',
      reason: hardBounce.detail,
      celery_task_id: webhooks[1]?.payload.data.celery_task_id,
      sequence: 2,
      tags: [],
      metadata: {},
    });
    assert.equal(await metric('notify_suppressions_total', { reason: 'hard_bounce' }), before + 1);
    assert.equal(await metric('notify_recipient_reports_total', { kind: 'bounced', suppression: 'hard_bounce' }), 1);
  });

  test('the same report again changes nothing', async () => {
    const id = await message('twice@example.org');
    await reports.call('ApplyReport', { messageId: id, ...hardBounce });
    const [eventsBefore, webhooksBefore] = [await events(id), await webhookEvents(id)];
    assert.deepEqual(await reports.call('ApplyReport', { messageId: id, ...hardBounce }), { state: 'bounced', changed: false });
    assert.deepEqual(
      await reports.call('ApplyReport', { messageId: id, kind: 'complained', suppression: 'complaint', detail: 'abuse', smtpCode: 0, receivedAt: '' }),
      { state: 'bounced', changed: false },
    );
    assert.deepEqual(await events(id), eventsBefore);
    assert.deepEqual(await webhookEvents(id), webhooksBefore);
    assert.equal((await row(id))?.state, 'bounced');
  });

  test('a complaint moves a sent message to complained and suppresses the address as a complaint', async () => {
    const id = await message('angry@example.org');
    const report = { messageId: id, kind: 'complained', suppression: 'complaint', detail: 'abuse (Yahoo!-Mail-Feedback/2.0)', smtpCode: 0, receivedAt: '' };
    assert.deepEqual(await reports.call('ApplyReport', report), { state: 'complained', changed: true });
    assert.deepEqual((await events(id)).at(-1), { state: 'complained', attempt: 1, smtp_code: null, reason: report.detail });
    assert.deepEqual(await suppression('angry@example.org'), { reason: 'complaint', message_id: id });
    assert.deepEqual(
      (await webhookEvents(id)).map((each) => each.type),
      ['message.sent', 'message.complained'],
    );
  });

  test('a soft bounce moves the message but suppresses nothing', async () => {
    const id = await message('full@example.org');
    assert.deepEqual(
      await reports.call('ApplyReport', { messageId: id, kind: 'bounced', suppression: '', detail: '4.2.2 mailbox full', smtpCode: 452, receivedAt: '' }),
      { state: 'bounced', changed: true },
    );
    assert.equal(await suppression('full@example.org'), undefined);
    assert.deepEqual(
      (await webhookEvents(id)).map((each) => each.type),
      ['message.sent', 'message.bounced'],
    );
  });

  test('a report about a message not yet sent is ABORTED report_early and records nothing', async () => {
    const id = await message('early@example.org', 'queued');
    await assertRefused(reports.call('ApplyReport', { messageId: id, ...hardBounce }), status.ABORTED, 'report_early');
    assert.equal((await row(id))?.state, 'queued');
    assert.deepEqual(
      (await events(id)).map((each) => each.state),
      ['queued'],
    );
    assert.equal(await suppression('early@example.org'), undefined);
  });

  test('a report about an unknown message is NOT_FOUND; a malformed one is INVALID_ARGUMENT', async () => {
    await assertRefused(reports.call('ApplyReport', { messageId: 999_999_999, ...hardBounce }), status.NOT_FOUND, 'message_not_found');
    const id = await message('odd@example.org');
    await assertRefused(reports.call('ApplyReport', { messageId: id, ...hardBounce, kind: 'deferred' }), status.INVALID_ARGUMENT, 'invalid_argument');
    await assertRefused(reports.call('ApplyReport', { messageId: id, ...hardBounce, suppression: 'complaint' }), status.INVALID_ARGUMENT, 'invalid_argument');
    await assertRefused(reports.call('ApplyReport', { messageId: id, ...hardBounce, receivedAt: 'yesterday' }), status.INVALID_ARGUMENT, 'invalid_argument');
    assert.equal((await row(id))?.state, 'sent');
  });

  test('a delivery event arriving after the report does not move the message back', async () => {
    const id = await message('late@example.org');
    await reports.call('ApplyReport', { messageId: id, ...hardBounce });
    assert.equal(await applyDeliveryEvent(h.pool, { messageId: id, state: 'sent', attempt: 2, occurredAt: new Date().toISOString() }), 'recorded');
    assert.equal((await row(id))?.state, 'bounced');
  });
});

describe('Unsubscribe', () => {
  const token = (messageId: number, address: string) => unsubscribeToken(h.deps.dataKey, { projectId: h.ids.projectId, messageId, address });

  test('a valid token suppresses the address with the message as cause and writes one webhook event', async () => {
    const id = await message('reader@Example.com');
    const link = token(id, 'reader@Example.com');
    assert.deepEqual(await reports.call('Unsubscribe', { token: link, source: 'one_click', dryRun: false }), {
      maskedAddress: 'r***@Example.com',
      suppressed: true,
      changed: true,
    });
    assert.deepEqual(await suppression('reader@example.com'), { reason: 'unsubscribed', message_id: id });
    assert.deepEqual(await reports.call('Unsubscribe', { token: link, source: 'one_click', dryRun: false }), {
      maskedAddress: 'r***@Example.com',
      suppressed: true,
      changed: false,
    });
    const webhooks = await webhookEvents(id);
    assert.deepEqual(
      webhooks.map((each) => each.type),
      ['message.sent', 'message.unsubscribed'],
    );
    assert.equal(webhooks[1]?.payload.data.status, 'sent', 'an unsubscribe does not change the message state');
    assert.equal((await row(id))?.state, 'sent');
  });

  test('a forged or malformed token is INVALID_ARGUMENT invalid_token and changes nothing', async () => {
    const id = await message('victim@example.com');
    const forged = unsubscribeToken(createDataKey(randomBytes(32)), { projectId: h.ids.projectId, messageId: id, address: 'victim@example.com' });
    await assertRefused(reports.call('Unsubscribe', { token: forged, source: 'one_click', dryRun: false }), status.INVALID_ARGUMENT, 'invalid_token');
    await assertRefused(reports.call('Unsubscribe', { token: 'not a token', source: 'one_click', dryRun: true }), status.INVALID_ARGUMENT, 'invalid_token');
    const genuine = token(id, 'victim@example.com');
    await assertRefused(
      reports.call('Unsubscribe', { token: `${genuine.slice(0, -2)}AA`, source: 'one_click', dryRun: false }),
      status.INVALID_ARGUMENT,
      'invalid_token',
    );
    assert.equal(await suppression('victim@example.com'), undefined);
  });

  test('dry_run only verifies and says whether the address is suppressed', async () => {
    const id = await message('careful@example.com');
    const link = token(id, 'careful@example.com');
    assert.deepEqual(await reports.call('Unsubscribe', { token: link, source: 'page', dryRun: true }), {
      maskedAddress: 'c***@example.com',
      suppressed: false,
      changed: false,
    });
    assert.equal(await suppression('careful@example.com'), undefined);
    assert.deepEqual(
      (await webhookEvents(id)).map((each) => each.type),
      ['message.sent'],
    );
    await reports.call('Unsubscribe', { token: link, source: 'page', dryRun: false });
    assert.deepEqual(await reports.call('Unsubscribe', { token: link, source: 'page', dryRun: true }), {
      maskedAddress: 'c***@example.com',
      suppressed: true,
      changed: false,
    });
  });

  test('works when the message has been purged: the address is suppressed without a cause or an event', async () => {
    const id = await message('purged@example.com');
    await h.pool.query('DELETE FROM messages WHERE id = $1', [id]);
    assert.deepEqual(await reports.call('Unsubscribe', { token: token(id, 'purged@example.com'), source: 'mailto', dryRun: false }), {
      maskedAddress: 'p***@example.com',
      suppressed: true,
      changed: true,
    });
    assert.deepEqual(await suppression('purged@example.com'), { reason: 'unsubscribed', message_id: null });
  });

  test('an address suppressed for another reason stays so, with no new event', async () => {
    const id = await message('known@example.com');
    await reports.call('ApplyReport', { messageId: id, ...hardBounce });
    assert.deepEqual(await reports.call('Unsubscribe', { token: token(id, 'known@example.com'), source: 'one_click', dryRun: false }), {
      maskedAddress: 'k***@example.com',
      suppressed: true,
      changed: false,
    });
    assert.equal((await suppression('known@example.com'))?.reason, 'hard_bounce');
    assert.deepEqual(
      (await webhookEvents(id)).map((each) => each.type),
      ['message.sent', 'message.bounced'],
    );
  });

  test('an unknown source is INVALID_ARGUMENT', async () => {
    await assertRefused(
      reports.call('Unsubscribe', { token: token(1, 'x@example.com'), source: 'web', dryRun: true }),
      status.INVALID_ARGUMENT,
      'invalid_argument',
    );
  });
});

test('masking keeps the first character of the local part and the domain', () => {
  assert.equal(maskAddress('ada@example.com'), 'a***@example.com');
  assert.equal(maskAddress('ñu@ejemplo.es'), 'ñ***@ejemplo.es');
  assert.equal(maskAddress('@example.com'), '***@example.com');
});

test('the deliverability gauges give each project its day of bounces and complaints over what reached the relay', async () => {
  await updateDeliverabilityGauges(h.pool, h.metrics);
  const labels = { project_id: String(h.ids.projectId) };
  const delivered = (await metric('notify_project_delivered_last_day', labels)) ?? 0;
  assert.ok(delivered >= 10, `delivered ${delivered}`);
  const bounced = Number((await h.pool.query<{ n: number }>(`SELECT count(*)::int AS n FROM message_events WHERE state = 'bounced'`)).rows[0]?.n);
  const complained = Number((await h.pool.query<{ n: number }>(`SELECT count(*)::int AS n FROM message_events WHERE state = 'complained'`)).rows[0]?.n);
  assert.equal(await metric('notify_project_bounce_ratio', labels), bounced / delivered);
  assert.equal(await metric('notify_project_complaint_ratio', labels), complained / delivered);
});
