// Erasure against a real database, through ErasureAdminService and the panel's call: the address matched literally
// (its dots and plus are no pattern) and in any case, only in the project named, and refused when it is no address;
// counted by origin; and a delivery that ends, or a bounce reported, after it records no address and suppresses nothing.
import assert from 'node:assert/strict';
import { createHash, randomBytes } from 'node:crypto';
import { after, before, test } from 'node:test';
import { status } from '@grpc/grpc-js';
import { GrpcClient } from '@notify/platform';
import { createDataKey } from '@notify/platform/mail';
import { dispatchProto } from '@notify/proto';
import { assertRefused } from '@notify/test/harness/refusal.ts';
import { applyDeliveryEvents } from '../events/event-store.ts';
import { applyRecipientReport, applyUnsubscribe } from '../reports/report-store.ts';
import { erasedAddress, keyUnkeyedErasedAddresses } from '../suppressions/suppression-store.ts';
import { type Harness, startHarness } from '../testing/harness.ts';

let h: Harness;
let erasure: GrpcClient<typeof dispatchProto.ErasureAdminService.service>;
let panel: GrpcClient<typeof dispatchProto.PanelService.service>;

before(async () => {
  h = await startHarness();
  erasure = new GrpcClient(dispatchProto.ErasureAdminService.service, h.address, { token: h.callers.admin.token, deadlineMs: 5_000 });
  panel = new GrpcClient(dispatchProto.PanelService.service, h.address, { token: h.callers.gateway.token, deadlineMs: 5_000 });
  await h.admin.call('PutTemplate', { projectId: h.ids.projectId, slug: 'welcome', subject: 'Hi', text: 'Hi', active: true });
  await h.admin.call('PutTemplate', { projectId: h.ids.otherProjectId, slug: 'welcome', subject: 'Hi', text: 'Hi', active: true });
  // An endpoint for message.unsubscribed, so that its events are recorded (none are for a project without one).
  const webhooks = new GrpcClient(dispatchProto.WebhookAdminService.service, h.address, { token: h.callers.admin.token, deadlineMs: 5_000 });
  await webhooks.call('CreateWebhook', { projectId: h.ids.projectId, url: 'https://hooks.example.com/notify', eventTypes: ['message.unsubscribed'] });
  webhooks.close();
});

after(async () => {
  erasure?.close();
  panel?.close();
  await h?.close();
});

async function accept(to: string, projectId = h.ids.projectId): Promise<number> {
  const response = await h.dispatch.call(
    'Send',
    h.sendRequest({ projectId, to, dataJson: JSON.stringify({ contact: to }), metadataJson: JSON.stringify({ customer: to }) }),
  );
  return response.messageId;
}

const rowOf = async (id: number) =>
  (await h.pool.query<{ recipient: string; data: unknown; metadata: unknown }>('SELECT recipient, data, metadata FROM messages WHERE id = $1', [id])).rows[0];

/** Whether the message, its events or its webhook events hold the address, in any case. */
const holdsAddress = async (id: number, address: string): Promise<boolean> => {
  const { rows } = await h.pool.query<{ holds: boolean }>(
    `SELECT strpos(lower(to_jsonb(m)::text || (SELECT coalesce(jsonb_agg(e)::text, '') FROM message_events e WHERE e.message_id = m.id)
                   || (SELECT coalesce(jsonb_agg(w)::text, '') FROM webhook_events w WHERE w.message_id = m.id)), $2) > 0 AS holds
       FROM messages m WHERE m.id = $1`,
    [id, address],
  );
  return rows[0]?.holds ?? true;
};

test('erases the address in any case, literally, and only in the project named', async () => {
  const mine = await accept('a.b+x@example.com');
  const lookalike = await accept('aXb+x@example.com');
  const elsewhere = await accept('A.B+X@example.com', h.ids.otherProjectId);
  await h.pool.query(`INSERT INTO message_events (message_id, state, attempt, smtp_response, occurred_at) VALUES ($1, 'deferred', 1, $2, now())`, [
    mine,
    '451 4.2.0 <A.B+X@Example.com> mailbox busy',
  ]);

  const erased = await erasure.call('EraseRecipient', { projectId: h.ids.projectId, address: 'A.b+X@EXAMPLE.com' });
  assert.equal(erased.messages, 1);
  assert.equal(erased.events, 1);
  assert.deepEqual(await rowOf(mine), { recipient: 'erased@erased.invalid', data: {}, metadata: { customer: 'erased@erased.invalid' } });
  const { rows } = await h.pool.query<{ smtp_response: string }>(
    'SELECT smtp_response FROM message_events WHERE message_id = $1 AND smtp_response IS NOT NULL',
    [mine],
  );
  assert.deepEqual(rows, [{ smtp_response: '451 4.2.0 <erased@erased.invalid> mailbox busy' }]);
  assert.deepEqual(await rowOf(lookalike), {
    recipient: 'aXb+x@example.com',
    data: { contact: 'aXb+x@example.com' },
    metadata: { customer: 'aXb+x@example.com' },
  });
  assert.deepEqual(await rowOf(elsewhere), {
    recipient: 'A.B+X@example.com',
    data: { contact: 'A.B+X@example.com' },
    metadata: { customer: 'A.B+X@example.com' },
  });
  assert.equal(
    (await erasure.call('EraseRecipient', { projectId: h.ids.projectId, address: 'a.b+x@example.com' })).messages,
    0,
    'erasing again changes nothing',
  );
});

test('refuses what is no address or no project, and the panel only within the organization', async () => {
  await assertRefused(erasure.call('EraseRecipient', { projectId: h.ids.projectId, address: 'nobody' }), status.INVALID_ARGUMENT, 'invalid_argument');
  await assertRefused(erasure.call('EraseRecipient', { projectId: 0, address: 'a@example.com' }), status.INVALID_ARGUMENT, 'invalid_argument');
  const elsewhere = await accept('kept@example.com');
  await assertRefused(
    panel.call('EraseProjectRecipient', { organizationId: h.ids.organizationId + 1000, projectId: h.ids.projectId, address: 'kept@example.com' }),
    status.NOT_FOUND,
    'project_not_found',
  );
  assert.equal((await rowOf(elsewhere))?.recipient, 'kept@example.com');
  const erased = await panel.call('EraseProjectRecipient', { organizationId: h.ids.organizationId, projectId: h.ids.projectId, address: 'kept@example.com' });
  assert.equal(erased.messages, 1);
  assert.match(await h.registry.getSingleMetricAsString('notify_erased_messages_total'), /origin="panel"[^}]*\} 1(\n|$)/);
  assert.match(await h.registry.getSingleMetricAsString('notify_erasures_total'), /origin="notifyctl"[^}]*\} 2(\n|$)/);
});

test("a delivery that ends after the erasure records the relay's reply with the marker, not the address it quotes", async () => {
  const id = await accept('late@example.com');
  await erasure.call('EraseRecipient', { projectId: h.ids.projectId, address: 'late@example.com' });
  const occurredAt = new Date().toISOString();
  const reply = '5.1.1 <Late@Example.com>: no such user';
  await applyDeliveryEvents(h.pool, [
    { event: { messageId: id, state: 'sending', attempt: 1, occurredAt } },
    {
      event: {
        messageId: id,
        state: 'failed',
        attempt: 1,
        occurredAt,
        smtpCode: 550,
        smtpResponse: reply,
        reason: `recipient refused: ${reply}`,
        suppression: 'hard_bounce',
      },
    },
  ]);
  assert.equal(await holdsAddress(id, 'late@example.com'), false);
  const { rows: failed } = await h.pool.query('SELECT state, last_smtp_response, failure_reason FROM messages WHERE id = $1', [id]);
  assert.deepEqual(failed, [
    {
      state: 'failed',
      last_smtp_response: '5.1.1 <erased@erased.invalid>: no such user',
      failure_reason: 'recipient refused: 5.1.1 <erased@erased.invalid>: no such user',
    },
  ]);
});

test('a bounce reported after the erasure records no address and suppresses nothing', async () => {
  const id = await accept('bounced@example.com');
  const occurredAt = new Date().toISOString();
  await applyDeliveryEvents(h.pool, [
    { event: { messageId: id, state: 'sending', attempt: 1, occurredAt } },
    { event: { messageId: id, state: 'sent', attempt: 1, occurredAt, smtpCode: 250, smtpResponse: '250 2.0.0 OK' } },
  ]);
  await erasure.call('EraseRecipient', { projectId: h.ids.projectId, address: 'bounced@example.com' });
  const outcome = await applyRecipientReport(h.pool, h.deps.dataKey, {
    messageId: id,
    kind: 'bounced',
    suppression: 'hard_bounce',
    detail: '5.1.1 smtp; 550 <bounced@example.com> unknown',
    smtpCode: 550,
    receivedAt: occurredAt,
  });
  assert.deepEqual(outcome, { found: true, early: false, state: 'bounced', changed: true, suppressed: false });
  assert.equal(await holdsAddress(id, 'bounced@example.com'), false);
  const { rows } = await h.pool.query('SELECT address FROM suppressions WHERE project_id = $1 AND address = $2', [h.ids.projectId, 'erased@erased.invalid']);
  assert.deepEqual(rows, [], 'the marker is never suppressed');
});

/** The project's suppression entries and message.unsubscribed webhook events, as stored. */
async function suppressionsAndUnsubscribedEvents(address: string, messageId: number): Promise<{ entries: string[]; events: number }> {
  const entries = await h.pool.query<{ address: string }>(
    'SELECT address FROM suppressions WHERE project_id = $1 AND (lower(address) = lower($2) OR address = $3) ORDER BY address',
    [h.ids.projectId, address, erasedAddress(h.deps.dataKey, h.ids.projectId, address)],
  );
  const events = await h.pool.query<{ n: number }>("SELECT count(*)::int AS n FROM webhook_events WHERE message_id = $1 AND type = 'message.unsubscribed'", [
    messageId,
  ]);
  return { entries: entries.rows.map((row) => row.address), events: events.rows[0]?.n ?? -1 };
}

test('an unsubscribe link used after the erasure matches the hashed entry: nothing in clear, no second message.unsubscribed', async () => {
  const address = 'Unsub.After@Example.com';
  const id = await accept(address);
  const claim = { projectId: h.ids.projectId, messageId: id, address, source: 'one_click' };
  assert.deepEqual(await applyUnsubscribe(h.pool, h.deps.dataKey, claim), { suppressed: true, changed: true });
  const first = await suppressionsAndUnsubscribedEvents(address, id);
  assert.equal(first.events, 1);
  await erasure.call('EraseRecipient', { projectId: h.ids.projectId, address });
  assert.deepEqual(await applyUnsubscribe(h.pool, h.deps.dataKey, claim), { suppressed: true, changed: false });
  assert.deepEqual(await suppressionsAndUnsubscribedEvents(address, id), {
    entries: [erasedAddress(h.deps.dataKey, h.ids.projectId, address)],
    events: first.events,
  });
  // An operator adding the address again is answered with the entry the erasure kept, still nothing in clear.
  const suppressions = new GrpcClient(dispatchProto.SuppressionAdminService.service, h.address, { token: h.callers.admin.token, deadlineMs: 5_000 });
  try {
    await suppressions.call('AddSuppression', { projectId: h.ids.projectId, address, reason: 'manual' });
  } finally {
    suppressions.close();
  }
  assert.deepEqual((await suppressionsAndUnsubscribedEvents(address, id)).entries, [erasedAddress(h.deps.dataKey, h.ids.projectId, address)]);
});

test('the first unsubscribe of a recipient erased before it is listed as a hash only, with one message.unsubscribed that names no address', async () => {
  const address = 'never.suppressed@example.com';
  const id = await accept(address);
  await erasure.call('EraseRecipient', { projectId: h.ids.projectId, address });
  assert.deepEqual(await applyUnsubscribe(h.pool, h.deps.dataKey, { projectId: h.ids.projectId, messageId: id, address, source: 'mailto' }), {
    suppressed: true,
    changed: true,
  });
  assert.deepEqual(await suppressionsAndUnsubscribedEvents(address, id), { entries: [erasedAddress(h.deps.dataKey, h.ids.projectId, address)], events: 1 });
  assert.equal(await holdsAddress(id, address), false);
  // Still refused: a send to the address finds the hashed entry.
  await assertRefused(h.dispatch.call('Send', h.sendRequest({ to: address })), status.FAILED_PRECONDITION, 'recipient_suppressed');
});

test('an erased entry is a keyed hash: the bare SHA-256 of a guess does not find it, another data key gives another hash', async () => {
  const address = 'Keyed@Example.com';
  const id = await accept(address);
  assert.deepEqual(await applyUnsubscribe(h.pool, h.deps.dataKey, { projectId: h.ids.projectId, messageId: id, address, source: 'one_click' }), {
    suppressed: true,
    changed: true,
  });
  await erasure.call('EraseRecipient', { projectId: h.ids.projectId, address });
  const { rows } = await h.pool.query<{ address: string }>('SELECT address FROM suppressions WHERE project_id = $1 AND address LIKE $2', [
    h.ids.projectId,
    'hmac-sha256:%',
  ]);
  const kept = erasedAddress(h.deps.dataKey, h.ids.projectId, address);
  assert.ok(rows.some((row) => row.address === kept));
  // What someone with the database alone could compute from a guess, in every spelling the list would match.
  for (const guess of [address, 'Keyed@example.com']) {
    const bare = createHash('sha256').update(`${h.ids.projectId}:${guess}`).digest('hex');
    assert.ok(!rows.some((row) => row.address.includes(bare)), guess);
  }
  assert.notEqual(erasedAddress(createDataKey(randomBytes(32)), h.ids.projectId, address), kept);
  await assertRefused(h.dispatch.call('Send', h.sendRequest({ to: 'Keyed@EXAMPLE.com' })), status.FAILED_PRECONDITION, 'recipient_suppressed');
});

test('an entry erased before hashes were keyed is honoured, then replaced by its keyed hash with its reason and date', async () => {
  const address = 'unkeyed@example.com';
  const unkeyed = `sha256:${createHash('sha256').update(`${h.ids.projectId}:${address}`).digest('hex')}`;
  const since = new Date('2026-01-02T03:04:05.000Z');
  await h.pool.query("INSERT INTO suppressions (project_id, address, reason, created_at) VALUES ($1, $2, 'complaint', $3)", [h.ids.projectId, unkeyed, since]);
  await assertRefused(h.dispatch.call('Send', h.sendRequest({ to: address })), status.FAILED_PRECONDITION, 'recipient_suppressed');

  assert.ok((await keyUnkeyedErasedAddresses(h.pool, h.deps.dataKey)) >= 1);
  const { rows } = await h.pool.query<{ address: string; reason: string; createdAt: Date }>(
    'SELECT address, reason, created_at AS "createdAt" FROM suppressions WHERE project_id = $1 AND address IN ($2, $3)',
    [h.ids.projectId, unkeyed, erasedAddress(h.deps.dataKey, h.ids.projectId, address)],
  );
  assert.deepEqual(rows, [{ address: erasedAddress(h.deps.dataKey, h.ids.projectId, address), reason: 'complaint', createdAt: since }]);
  await assertRefused(h.dispatch.call('Send', h.sendRequest({ to: address })), status.FAILED_PRECONDITION, 'recipient_suppressed');
  assert.equal(await keyUnkeyedErasedAddresses(h.pool, h.deps.dataKey), 0, 'nothing left to replace');
});
