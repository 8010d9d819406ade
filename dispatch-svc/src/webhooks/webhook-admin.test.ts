// WebhookAdminService and the panel's webhook calls over real gRPC on a run-unique database. Events, deliveries and
// attempts are written directly, as the event store and the sender would.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { status } from '@grpc/grpc-js';
import { GrpcClient, type RemoteError } from '@notify/platform';
import { webhookSecretSealContext } from '@notify/platform/mail';
import { dispatchProto } from '@notify/proto';
import { assertRefused } from '@notify/test/harness/refusal.ts';
import { type Harness, startHarness } from '../testing/harness.ts';

let h: Harness;
let webhooks: GrpcClient<typeof dispatchProto.WebhookAdminService.service>;
let panel: GrpcClient<typeof dispatchProto.PanelService.service>;

before(async () => {
  h = await startHarness();
  await h.admin.call('PutTemplate', { projectId: h.ids.projectId, slug: 'welcome', subject: 'Hi', text: 'Hi', active: true });
  webhooks = new GrpcClient(dispatchProto.WebhookAdminService.service, h.address, { token: h.callers.admin.token, deadlineMs: 5_000 });
  panel = new GrpcClient(dispatchProto.PanelService.service, h.address, { token: h.callers.gateway.token, deadlineMs: 5_000 });
});

after(async () => {
  webhooks?.close();
  panel?.close();
  await h?.close();
});

const create = (overrides: { url?: string; eventTypes?: string[]; projectId?: number } = {}) =>
  webhooks.call('CreateWebhook', { projectId: h.ids.projectId, url: 'https://hooks.example.com/notify', ...overrides });

/** The endpoint's secrets as stored, opened (they are sealed under its id), and whether the previous one signs for a day. */
async function stored(id: number) {
  const { rows } = await h.pool.query<{ sealed_secret: string; sealed_previous_secret: string | null; expiresInADay: boolean | null }>(
    'SELECT sealed_secret, sealed_previous_secret, previous_secret_expires_at - now() > interval \'23 hours\' AS "expiresInADay" FROM webhook_endpoints WHERE id = $1',
    [id],
  );
  const row = rows[0]!;
  const open = (sealed: string | null) => sealed && h.deps.dataKey.open(sealed, webhookSecretSealContext(id));
  return { secret: open(row.sealed_secret), previous_secret: open(row.sealed_previous_secret), expiresInADay: row.expiresInADay };
}

/** An event of a new message with one delivery per endpoint (state given), as the event store and sender leave it. */
async function deliveredEvent(endpointIds: number[], state: 'succeeded' | 'failed' = 'failed', attempts = 3): Promise<number> {
  const messageId = await h.acceptMessage();
  const event = await h.pool.query<{ id: number }>(
    `INSERT INTO webhook_events (project_id, message_id, type, sequence, payload, published_at) VALUES ($1, $2, 'message.sent', 1, '{}', now()) RETURNING id`,
    [h.ids.projectId, messageId],
  );
  const eventId = event.rows[0]!.id;
  for (const endpointId of endpointIds) {
    await h.pool.query(`INSERT INTO webhook_deliveries (event_id, endpoint_id, state, attempts) VALUES ($1, $2, $3, $4)`, [
      eventId,
      endpointId,
      state,
      attempts,
    ]);
  }
  return eventId;
}

describe('creating and listing endpoints', () => {
  test('an endpoint is created with all six event types by default and its secret is returned once', async () => {
    const created = await create();
    assert.match(created.secret, /^whsec_[A-Za-z0-9+/]{43}=$/);
    assert.equal(created.webhook?.url, 'https://hooks.example.com/notify');
    assert.equal(created.webhook?.organizationId, h.ids.organizationId);
    assert.deepEqual(created.webhook?.eventTypes, [
      'message.sent',
      'message.deferred',
      'message.failed',
      'message.bounced',
      'message.complained',
      'message.unsubscribed',
    ]);
    assert.equal(created.webhook?.enabled, true);
    assert.equal((await stored(created.webhook!.id)).secret, created.secret);
    const listed = await webhooks.call('ListWebhooks', { projectId: h.ids.projectId });
    const entry = listed.webhooks.find((webhook) => webhook.id === created.webhook?.id);
    assert.deepEqual(entry, created.webhook);
    assert.ok(!JSON.stringify(listed).includes(created.secret), 'a listing never shows the secret');
    assert.deepEqual((await webhooks.call('ListWebhooks', { projectId: h.ids.otherProjectId })).webhooks, []);
  });

  test('a request with a bad URL or unknown event type is refused with every fault named', async () => {
    const error = await assertRefused(
      create({ url: 'http://hooks.example.com/', eventTypes: ['message.sent', 'message.opened'] }),
      status.INVALID_ARGUMENT,
      'invalid_argument',
    );
    assert.deepEqual(error.fields, [
      'url: must use https (plain http is allowed only with NOTIFY_WEBHOOK_ALLOW_PRIVATE=true)',
      'event_types: unknown event type "message.opened" (one of message.sent, message.deferred, message.failed, message.bounced, message.complained, message.unsubscribed)',
    ]);
    await assertRefused(create({ projectId: 999_999 }), status.NOT_FOUND, 'project_not_found');
  });

  test('a project with as many endpoints as allowed, disabled ones included, is refused another until one is deleted', async () => {
    const project = await h.pool.query<{ id: number }>(`INSERT INTO projects (organization_id, name) VALUES ($1, 'many endpoints') RETURNING id`, [
      h.ids.organizationId,
    ]);
    const projectId = project.rows[0]!.id;
    const allowed = h.deps.webhookEndpointsPerProject;
    // Made at once: the two past the limit are refused however the creations interleave.
    const outcomes = await Promise.allSettled(Array.from({ length: allowed + 2 }, () => create({ projectId })));
    const ids = outcomes.flatMap((outcome) => (outcome.status === 'fulfilled' ? [outcome.value.webhook!.id] : []));
    assert.equal(ids.length, allowed);
    assert.deepEqual(
      outcomes.flatMap((outcome) => (outcome.status === 'rejected' ? [(outcome.reason as RemoteError).reason] : [])),
      ['webhook_limit_reached', 'webhook_limit_reached'],
    );
    await webhooks.call('SetWebhookEnabled', { id: ids[0]!, enabled: false });
    const refused = await assertRefused(create({ projectId }), status.FAILED_PRECONDITION, 'webhook_limit_reached');
    assert.match(refused.message, new RegExp(`project ${projectId} has ${allowed} webhook endpoints`));
    await assertRefused(
      panel.call('CreateProjectWebhook', { projectId, organizationId: h.ids.organizationId, url: 'https://panel.example.com/hook', eventTypes: [] }),
      status.FAILED_PRECONDITION,
      'webhook_limit_reached',
    );
    await webhooks.call('DeleteWebhook', { id: ids[0]! });
    assert.ok((await create({ projectId })).webhook);
  });

  test('plain http is accepted when dispatch-svc allows private targets', async () => {
    const local = await startHarness({ webhookAllowPrivate: true });
    const client = new GrpcClient(dispatchProto.WebhookAdminService.service, local.address, { token: local.callers.admin.token, deadlineMs: 5_000 });
    try {
      const created = await client.call('CreateWebhook', { projectId: local.ids.projectId, url: 'http://127.0.0.1:9000/hook', eventTypes: ['message.failed'] });
      assert.deepEqual(created.webhook?.eventTypes, ['message.failed']);
    } finally {
      client.close();
      await local.close();
    }
  });

  test('the admin token is required', async () => {
    const withGateway = new GrpcClient(dispatchProto.WebhookAdminService.service, h.address, { token: h.callers.gateway.token, deadlineMs: 5_000 });
    try {
      await assertRefused(withGateway.call('ListWebhooks', { projectId: h.ids.projectId }), status.PERMISSION_DENIED, 'permission_denied');
    } finally {
      withGateway.close();
    }
  });
});

describe('changing an endpoint', () => {
  test('disabling records the operator; enabling clears the reason and the run of failures', async () => {
    const id = (await create()).webhook!.id;
    await h.pool.query(`UPDATE webhook_endpoints SET failing_since = now() - interval '1 day' WHERE id = $1`, [id]);
    const disabled = await webhooks.call('SetWebhookEnabled', { id, enabled: false });
    assert.equal(disabled.enabled, false);
    assert.equal(disabled.disabledReason, 'operator');
    const enabled = await webhooks.call('SetWebhookEnabled', { id, enabled: true });
    assert.deepEqual([enabled.enabled, enabled.disabledReason, enabled.failingSince], [true, '', '']);
  });

  test('an endpoint the sender disabled keeps its reason when an operator disables it too', async () => {
    const id = (await create()).webhook!.id;
    await h.pool.query(`UPDATE webhook_endpoints SET enabled = false, disabled_reason = 'gone' WHERE id = $1`, [id]);
    assert.equal((await webhooks.call('SetWebhookEnabled', { id, enabled: false })).disabledReason, 'gone');
  });

  test('rotation returns a new secret and keeps the old one signing for 24 hours', async () => {
    const created = await create();
    const id = created.webhook!.id;
    const rotated = await webhooks.call('RotateWebhookSecret', { id });
    assert.notEqual(rotated.secret, created.secret);
    assert.match(rotated.secret, /^whsec_/);
    assert.notEqual(rotated.webhook?.previousSecretExpiresAt, '');
    assert.deepEqual(await stored(id), { secret: rotated.secret, previous_secret: created.secret, expiresInADay: true });
  });

  test('deleting removes the endpoint; an unknown id is webhook_not_found everywhere', async () => {
    const id = (await create()).webhook!.id;
    assert.equal((await webhooks.call('DeleteWebhook', { id })).id, id);
    await assertRefused(webhooks.call('DeleteWebhook', { id }), status.NOT_FOUND, 'webhook_not_found');
    await assertRefused(webhooks.call('SetWebhookEnabled', { id, enabled: true }), status.NOT_FOUND, 'webhook_not_found');
    await assertRefused(webhooks.call('RotateWebhookSecret', { id }), status.NOT_FOUND, 'webhook_not_found');
    await assertRefused(webhooks.call('ListWebhookAttempts', { id }), status.NOT_FOUND, 'webhook_not_found');
    await assertRefused(webhooks.call('RotateWebhookSecret', { id: 0 }), status.INVALID_ARGUMENT, 'invalid_argument');
  });
});

describe('attempts and replays', () => {
  test('attempts are listed newest first with status, latency and the first KiB of the response, by message and by page', async () => {
    const endpointId = (await create()).webhook!.id;
    const first = await deliveredEvent([endpointId]);
    const second = await deliveredEvent([endpointId]);
    const insert = (eventId: number, attempt: number, statusCode: number | null, body: string | null, error: string | null) =>
      h.pool.query(
        `INSERT INTO webhook_attempts (event_id, endpoint_id, attempt, status_code, latency_ms, response_body, error) VALUES ($1, $2, $3, $4, 120, $5, $6)`,
        [eventId, endpointId, attempt, statusCode, body, error],
      );
    await insert(first, 1, 500, 'x'.repeat(3_000), null);
    await insert(first, 2, null, null, 'timed out after 10 s');
    await insert(second, 1, 200, 'ok', null);

    const page1 = await webhooks.call('ListWebhookAttempts', { id: endpointId, limit: 2 });
    assert.deepEqual(
      page1.attempts.map((attempt) => [attempt.webhookId, attempt.attempt, attempt.statusCode, attempt.error]),
      [
        [`evt_${second}`, 1, 200, ''],
        [`evt_${first}`, 2, 0, 'timed out after 10 s'],
      ],
    );
    assert.equal(page1.attempts[0]?.eventType, 'message.sent');
    assert.equal(page1.attempts[0]?.latencyMs, 120);
    const page2 = await webhooks.call('ListWebhookAttempts', { id: endpointId, limit: 2, beforeId: page1.nextBeforeId });
    assert.equal(page2.attempts.length, 1);
    assert.equal(page2.attempts[0]?.responseBody.length, 1_024);
    assert.equal(page2.nextBeforeId, 0);

    const messageOfSecond = page1.attempts[0]!.messageId;
    const filtered = await webhooks.call('ListWebhookAttempts', { id: endpointId, messageId: messageOfSecond });
    assert.deepEqual(
      filtered.attempts.map((attempt) => attempt.eventId),
      [second],
    );
  });

  test("a replay sets the event's deliveries back to pending, keeps their attempts and unpublishes the event", async () => {
    const a = (await create()).webhook!.id;
    const b = (await create()).webhook!.id;
    const eventId = await deliveredEvent([a, b], 'failed', 8);
    const replayed = await webhooks.call('ReplayWebhookEvent', { eventId });
    assert.deepEqual(replayed, { eventId, endpointIds: [a, b] });
    const deliveries = await h.pool.query(
      `SELECT state, attempts, replayed_after, next_attempt_at <= now() AS due FROM webhook_deliveries WHERE event_id = $1`,
      [eventId],
    );
    assert.deepEqual(deliveries.rows, [
      { state: 'pending', attempts: 8, replayed_after: 8, due: true },
      { state: 'pending', attempts: 8, replayed_after: 8, due: true },
    ]);
    const event = await h.pool.query('SELECT published_at FROM webhook_events WHERE id = $1', [eventId]);
    assert.equal(event.rows[0].published_at, null);
  });

  test('a replay to one endpoint leaves the other deliveries as they were', async () => {
    const a = (await create()).webhook!.id;
    const b = (await create()).webhook!.id;
    const eventId = await deliveredEvent([a, b], 'succeeded', 1);
    assert.deepEqual(await webhooks.call('ReplayWebhookEvent', { eventId, endpointId: b }), { eventId, endpointIds: [b] });
    const states = await h.pool.query(`SELECT endpoint_id AS "endpointId", state FROM webhook_deliveries WHERE event_id = $1 ORDER BY endpoint_id`, [eventId]);
    assert.deepEqual(states.rows, [
      { endpointId: a, state: 'succeeded' },
      { endpointId: b, state: 'pending' },
    ]);
  });

  test('an unknown event is webhook_event_not_found; one with no delivery is webhook_event_undelivered and stays published', async () => {
    await assertRefused(webhooks.call('ReplayWebhookEvent', { eventId: 999_999 }), status.NOT_FOUND, 'webhook_event_not_found');
    const eventId = await deliveredEvent([]);
    await assertRefused(webhooks.call('ReplayWebhookEvent', { eventId }), status.FAILED_PRECONDITION, 'webhook_event_undelivered');
    const event = await h.pool.query('SELECT published_at FROM webhook_events WHERE id = $1', [eventId]);
    assert.notEqual(event.rows[0].published_at, null);
  });
});

describe("the panel's webhook calls", () => {
  const scope = () => ({ projectId: h.ids.projectId, organizationId: h.ids.organizationId });

  test("create, list, disable, attempts and replay work within the organization's project", async () => {
    const created = await panel.call('CreateProjectWebhook', { ...scope(), url: 'https://panel.example.com/hook', eventTypes: ['message.failed'] });
    assert.match(created.secret, /^whsec_/);
    const webhookId = created.webhook!.id;
    assert.ok((await panel.call('ListProjectWebhooks', scope())).webhooks.some((webhook) => webhook.id === webhookId));
    assert.equal((await panel.call('SetProjectWebhookEnabled', { ...scope(), webhookId, enabled: false })).disabledReason, 'operator');
    const eventId = await deliveredEvent([webhookId]);
    assert.deepEqual((await panel.call('ListProjectWebhookAttempts', { ...scope(), webhookId })).attempts, []);
    assert.deepEqual(await panel.call('ReplayProjectWebhookEvent', { ...scope(), webhookId, eventId }), { eventId, endpointIds: [webhookId] });
  });

  test('another organization sees none of it', async () => {
    const webhookId = (await create()).webhook!.id;
    const eventId = await deliveredEvent([webhookId]);
    const plan = await h.pool.query<{ id: number }>(`INSERT INTO plans (name) VALUES ('other plan') RETURNING id`);
    const org = await h.pool.query<{ id: number }>(`INSERT INTO organizations (name, plan_id) VALUES ('Other Org', $1) RETURNING id`, [plan.rows[0]!.id]);
    const foreign = { projectId: h.ids.projectId, organizationId: org.rows[0]!.id };
    assert.deepEqual((await panel.call('ListProjectWebhooks', foreign)).webhooks, []);
    await assertRefused(panel.call('CreateProjectWebhook', { ...foreign, url: 'https://x.example.com/' }), status.NOT_FOUND, 'project_not_found');
    await assertRefused(panel.call('SetProjectWebhookEnabled', { ...foreign, webhookId, enabled: false }), status.NOT_FOUND, 'webhook_not_found');
    await assertRefused(panel.call('ListProjectWebhookAttempts', { ...foreign, webhookId }), status.NOT_FOUND, 'webhook_not_found');
    await assertRefused(panel.call('ReplayProjectWebhookEvent', { ...foreign, webhookId, eventId }), status.NOT_FOUND, 'webhook_not_found');
    assert.equal((await webhooks.call('ListWebhooks', { projectId: h.ids.projectId })).webhooks.find((webhook) => webhook.id === webhookId)?.enabled, true);
  });
});
