import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { after, before, describe, test } from 'node:test';
import { status } from '@grpc/grpc-js';
import { GrpcClient } from '@notify/platform';
import { type dispatch, dispatchProto } from '@notify/proto';
import { assertRefused } from '@notify/test/harness/refusal.ts';
import { waitFor } from '@notify/test/harness/wait.ts';
import { type Harness, startHarness } from '../testing/harness.ts';
import { releaseScheduled, updateScheduledBacklog } from './releaser.ts';
import { releaseDue, releaseLockKey } from './schedule-store.ts';

let h: Harness;
let panel: GrpcClient<typeof dispatchProto.PanelService.service>;

before(async () => {
  h = await startHarness();
  await h.admin.call('PutTemplate', {
    projectId: h.ids.projectId,
    slug: 'welcome',
    subject: 'Hello {{ name }}',
    html: '<p>Hi</p>',
    text: 'Hi',
    variablesSchemaJson: '',
    active: true,
  });
  panel = new GrpcClient(dispatchProto.PanelService.service, h.address, { token: h.callers.gateway.token, deadlineMs: 5_000 });
});

after(async () => {
  panel.close();
  await h.close();
});

const inAnHour = (): string => new Date(Date.now() + 3_600_000).toISOString();
const secondsAgo = (seconds: number): string => new Date(Date.now() - seconds * 1_000).toISOString();

const request = (overrides: Partial<dispatch.SendRequest> = {}): dispatch.SendRequest => h.sendRequest(overrides);

const count = async (sql: string, values: unknown[] = []): Promise<number> =>
  (await h.pool.query<{ n: number }>(`SELECT count(*)::int AS n FROM ${sql}`, values)).rows[0]?.n ?? -1;
const stateOf = async (id: number): Promise<string> =>
  (await h.pool.query<{ state: string }>('SELECT state FROM messages WHERE id = $1', [id])).rows[0]?.state ?? 'missing';
const lookup = (messageId: number, projectId = h.ids.projectId): dispatch.GetMessageRequest => ({ projectId, organizationId: h.ids.organizationId, messageId });
const releaserDeps = () => ({ pool: h.pool, publisher: h.publisher, metrics: h.metrics, logger: h.logger });

describe('a send with send_at', () => {
  test('is accepted scheduled: no outbox row, no job, its job waits in the schedule', async () => {
    const jobsBefore = await h.jobsInStream();
    const sendAt = inAnHour();
    const response = await h.dispatch.call('Send', request({ sendAt }));
    assert.equal(response.status, 'scheduled');
    assert.equal(response.sendAt, sendAt);
    assert.equal(await stateOf(response.messageId), 'scheduled');
    assert.equal(await count('outbox WHERE message_id = $1', [response.messageId]), 0);
    assert.equal(await count('scheduled_messages WHERE message_id = $1', [response.messageId]), 1);
    assert.equal(await h.jobsInStream(), jobsBefore);

    const message = await h.dispatch.call('GetMessage', lookup(response.messageId));
    assert.equal(message.state, 'scheduled');
    assert.equal(message.sendAt, sendAt);
    assert.deepEqual(
      message.events.map((event) => [event.state, event.attempt]),
      [['scheduled', 0]],
    );
  });

  test('a send without send_at answers as before, with no send_at', async () => {
    const response = await h.dispatch.call('Send', request());
    assert.equal(response.status, 'queued');
    assert.equal(response.sendAt, '');
    assert.equal((await h.dispatch.call('GetMessage', lookup(response.messageId))).sendAt, '');
  });

  test('a replay of a scheduled send answers its first response, send_at included, and schedules nothing more', async () => {
    const key = randomUUID();
    const sendAt = inAnHour();
    const first = await h.dispatch.call('Send', request({ sendAt, idempotencyKey: key, fingerprint: 'body-a' }));
    const scheduledBefore = await count('scheduled_messages');
    const replay = await h.dispatch.call('Send', request({ sendAt, idempotencyKey: key, fingerprint: 'body-a' }));
    assert.deepEqual(
      { ...replay, idempotentReplay: true, organizationAccepted: 0 },
      { ...first, idempotentReplay: true, organizationAccepted: 0, replayableForMs: replay.replayableForMs },
    );
    assert.equal(replay.idempotentReplay, true);
    assert.equal(replay.status, 'scheduled');
    assert.equal(replay.sendAt, sendAt);
    assert.equal(await count('scheduled_messages'), scheduledBefore);
  });

  test('a send_at that does not parse is refused as an invalid argument, writing nothing', async () => {
    const before = await count('messages');
    await assertRefused(h.dispatch.call('Send', request({ sendAt: 'tomorrow' })), status.INVALID_ARGUMENT, 'invalid_argument');
    assert.equal(await count('messages'), before);
  });
});

describe('the releaser', () => {
  test('queues due messages with their outbox row, publishes their jobs and leaves the others scheduled', async () => {
    const due = await h.dispatch.call('Send', request({ sendAt: secondsAgo(1) }));
    const later = await h.dispatch.call('Send', request({ sendAt: inAnHour() }));
    const jobsBefore = await h.jobsInStream();
    const releasedBefore = (await h.metrics.scheduledReleased.get()).values[0]?.value ?? 0;

    assert.ok((await releaseScheduled(releaserDeps())) >= 1);
    assert.equal(await stateOf(due.messageId), 'queued');
    assert.equal(await stateOf(later.messageId), 'scheduled');
    assert.equal(await count('scheduled_messages WHERE message_id = $1', [due.messageId]), 0);
    // Published at once, so the outbox row written with the release is gone again.
    assert.equal(await count('outbox WHERE message_id = $1', [due.messageId]), 0);
    assert.equal(await h.jobsInStream(), jobsBefore + 1);
    const { msgId, job } = await h.lastJob();
    assert.equal(msgId, due.celeryTaskId);
    assert.equal(job.celeryTaskId, due.celeryTaskId);
    assert.equal(job.template.slug, 'welcome');

    const message = await h.dispatch.call('GetMessage', lookup(due.messageId));
    assert.deepEqual(
      message.events.map((event) => [event.state, event.attempt]),
      [
        ['scheduled', 0],
        ['queued', 0],
      ],
    );
    assert.equal(await count('webhook_events WHERE message_id = $1', [due.messageId]), 0, 'the release is no webhook event');
    assert.equal((await h.metrics.scheduledReleased.get()).values[0]?.value, releasedBefore + 1);
    await updateScheduledBacklog(h.pool, h.metrics);
    const backlog = await count('scheduled_messages');
    assert.ok(backlog >= 1, 'the later message waits');
    assert.equal((await h.metrics.scheduledBacklog.get()).values[0]?.value, backlog);
  });

  test('releases nothing while another releaser holds the leader lock, and everything due once it lets go', async () => {
    const due = await h.dispatch.call('Send', request({ sendAt: secondsAgo(1) }));
    const leader = await h.pool.connect();
    try {
      await leader.query('BEGIN');
      await leader.query('SELECT pg_advisory_xact_lock($1)', [releaseLockKey]);
      assert.equal(await releaseScheduled(releaserDeps()), 0);
      assert.equal(await stateOf(due.messageId), 'scheduled');
      await leader.query('ROLLBACK');
    } finally {
      leader.release();
    }
    assert.equal(await releaseScheduled(releaserDeps()), 1);
    assert.equal(await stateOf(due.messageId), 'queued');
  });

  test('releases a backlog larger than one batch in one pass, a transaction per batch', async () => {
    const ids = await Promise.all(Array.from({ length: 7 }, async () => (await h.dispatch.call('Send', request({ sendAt: secondsAgo(2) }))).messageId));
    assert.equal(await releaseScheduled({ ...releaserDeps(), batchSize: 3 }), 7);
    for (const id of ids) assert.equal(await stateOf(id), 'queued');
  });
});

describe('canceling', () => {
  test('a scheduled message ends canceled, its job dropped, the transition recorded', async () => {
    const scheduled = await h.dispatch.call('Send', request({ sendAt: inAnHour() }));
    const message = await h.dispatch.call('CancelMessage', lookup(scheduled.messageId));
    assert.equal(message.state, 'canceled');
    assert.equal(message.id, scheduled.messageId);
    assert.deepEqual(
      message.events.map((event) => [event.state, event.reason]),
      [
        ['scheduled', ''],
        ['canceled', 'canceled through the API'],
      ],
    );
    assert.equal(await count('scheduled_messages WHERE message_id = $1', [scheduled.messageId]), 0);
    assert.equal(await count('outbox WHERE message_id = $1', [scheduled.messageId]), 0);
    assert.equal(await count('webhook_events WHERE message_id = $1', [scheduled.messageId]), 0, 'being scheduled or canceled is no webhook event');
  });

  test('a canceled message cannot be canceled again, nor a queued one', async () => {
    const scheduled = await h.dispatch.call('Send', request({ sendAt: inAnHour() }));
    await h.dispatch.call('CancelMessage', lookup(scheduled.messageId));
    await assertRefused(h.dispatch.call('CancelMessage', lookup(scheduled.messageId)), status.FAILED_PRECONDITION, 'not_cancelable');
    const queued = await h.dispatch.call('Send', request());
    await assertRefused(h.dispatch.call('CancelMessage', lookup(queued.messageId)), status.FAILED_PRECONDITION, 'not_cancelable');
    assert.equal(await stateOf(queued.messageId), 'queued');
  });

  test('a message the releaser already queued is not cancelable', async () => {
    const due = await h.dispatch.call('Send', request({ sendAt: secondsAgo(1) }));
    await releaseScheduled(releaserDeps());
    await assertRefused(h.dispatch.call('CancelMessage', lookup(due.messageId)), status.FAILED_PRECONDITION, 'not_cancelable');
  });

  test('a cancel that meets a release in progress waits for it, and is not_cancelable once it committed', async () => {
    const due = await h.dispatch.call('Send', request({ sendAt: secondsAgo(1) }));
    const releaser = await h.pool.connect();
    try {
      await releaser.query('BEGIN');
      assert.ok((await releaseDue(releaser, 500)).some((released) => released.payload.messageId === due.messageId));
      const cancel = assertRefused(h.dispatch.call('CancelMessage', lookup(due.messageId)), status.FAILED_PRECONDITION, 'not_cancelable');
      await waitFor(
        async () => {
          const waiting = await h.pool.query(
            `SELECT 1 FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock' AND query LIKE 'DELETE FROM scheduled_messages%'`,
          );
          return waiting.rowCount === 1;
        },
        { timeoutMs: 5_000, intervalMs: 10, what: "the cancel to wait for the release's row lock" },
      );
      await releaser.query('COMMIT');
      await cancel;
    } finally {
      releaser.release();
    }
    assert.equal(await stateOf(due.messageId), 'queued');
  });

  test('a release skips a message a cancel holds, and the cancel wins', async () => {
    const due = await h.dispatch.call('Send', request({ sendAt: secondsAgo(1) }));
    const canceler = await h.pool.connect();
    try {
      await canceler.query('BEGIN');
      await canceler.query('SELECT 1 FROM scheduled_messages WHERE message_id = $1 FOR UPDATE', [due.messageId]);
      await releaseScheduled(releaserDeps());
      assert.equal(await stateOf(due.messageId), 'scheduled', 'skipped, not waited for');
      await canceler.query('ROLLBACK');
    } finally {
      canceler.release();
    }
    assert.equal((await h.dispatch.call('CancelMessage', lookup(due.messageId))).state, 'canceled');
    await releaseScheduled(releaserDeps());
    assert.equal(await stateOf(due.messageId), 'canceled');
  });

  test("another project's message is not found, and stays scheduled", async () => {
    const scheduled = await h.dispatch.call('Send', request({ sendAt: inAnHour() }));
    await assertRefused(h.dispatch.call('CancelMessage', lookup(scheduled.messageId, h.ids.otherProjectId)), status.NOT_FOUND, 'message_not_found');
    await assertRefused(
      h.dispatch.call('CancelMessage', { ...lookup(scheduled.messageId), organizationId: h.ids.organizationId + 1_000 }),
      status.NOT_FOUND,
      'message_not_found',
    );
    assert.equal(await stateOf(scheduled.messageId), 'scheduled');
  });

  test('the panel cancels the same way, recording where', async () => {
    const scheduled = await h.dispatch.call('Send', request({ sendAt: inAnHour() }));
    const message = await panel.call('CancelProjectMessage', lookup(scheduled.messageId));
    assert.equal(message.state, 'canceled');
    assert.equal(message.events.at(-1)?.reason, 'canceled in the web panel');
    await assertRefused(panel.call('CancelProjectMessage', lookup(scheduled.messageId)), status.FAILED_PRECONDITION, 'not_cancelable');
  });
});
