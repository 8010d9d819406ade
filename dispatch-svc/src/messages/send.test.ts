import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { after, before, describe, test } from 'node:test';
import { status } from '@grpc/grpc-js';
import { GrpcClient } from '@notify/platform';
import { type dispatch, dispatchProto } from '@notify/proto';
import { assertRefused } from '@notify/test/harness/refusal.ts';
import { sweepExpiredIdempotencyRecords } from '../idempotency/expiry-sweeper.ts';
import { idempotencyLockKey } from '../idempotency/idempotency-store.ts';
import { type Harness, startHarness } from '../testing/harness.ts';
import { createSendHandler } from './send.ts';

let h: Harness;
const schema = { type: 'object', required: ['name', 'count'], properties: { name: { type: 'string' }, count: { type: 'integer' } } };

before(async () => {
  h = await startHarness();
  const put = (slug: string, active: boolean, projectId = h.ids.projectId, variablesSchemaJson = '') =>
    h.admin.call('PutTemplate', {
      projectId,
      slug,
      subject: 'Hello {{ name }}',
      html: '<p>Hi {{ name }}</p>',
      text: 'Hi {{ name }}',
      variablesSchemaJson,
      active,
    });
  await put('welcome', true);
  await put('dormant', false);
  await put('typed', true, h.ids.projectId, JSON.stringify(schema));
  await put('elsewhere', true, h.ids.otherProjectId);
});

after(() => h.close());

function request(overrides: Partial<dispatch.SendRequest> = {}): dispatch.SendRequest {
  return h.sendRequest(overrides);
}

const count = async (sql: string, values: unknown[] = []): Promise<number> =>
  (await h.pool.query<{ n: number }>(`SELECT count(*)::int AS n FROM ${sql}`, values)).rows[0]?.n ?? -1;

describe('accepting a message', () => {
  test('an accepted send stores the message, publishes its job and leaves the outbox empty', async () => {
    const jobsBefore = await h.jobsInStream();
    const response = await h.dispatch.call('Send', request({ dataJson: JSON.stringify({ name: 'Ada', order: { id: 7 } }) }));
    assert.equal(response.status, 'queued');
    assert.equal(response.idempotentReplay, false);
    assert.match(response.celeryTaskId, /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);

    const row = (await h.pool.query('SELECT * FROM messages WHERE id = $1', [response.messageId])).rows[0];
    assert.equal(row.state, 'queued');
    assert.equal(row.template_slug, 'welcome');
    assert.equal(row.template_version, 1);
    assert.equal(row.recipient, 'ada@example.com');
    assert.equal(row.celery_task_id, response.celeryTaskId);
    assert.deepEqual(row.data, { name: 'Ada', order: { id: 7 } });
    await h.outboxEmptied();
    assert.equal(await h.jobsInStream(), jobsBefore + 1);

    const { msgId, job } = await h.lastJob();
    assert.equal(msgId, response.celeryTaskId, 'JetStream tells jobs apart by celery_task_id');
    assert.equal(job.messageId, response.messageId);
    assert.equal(job.celeryTaskId, response.celeryTaskId);
    assert.equal(job.to, 'ada@example.com');
    assert.deepEqual(job.data, { name: 'Ada', order: { id: 7 } });
    assert.deepEqual(job.template, {
      slug: 'welcome',
      version: 1,
      subject: 'Hello {{ name }}',
      html: '<p>Hi {{ name }}</p>',
      text: 'Hi {{ name }}',
      unsubscribe: false,
    });
    assert.equal(job.projectId, h.ids.projectId);
    assert.equal(job.organizationId, h.ids.organizationId);
    assert.ok(!Number.isNaN(Date.parse(job.acceptedAt)));

    const published = await h.registry.getSingleMetricAsString('notify_jobs_published_total');
    assert.match(published, /path="direct"[^}]*\} [1-9]/);
  });

  test('data that satisfies the template schema is accepted', async () => {
    const response = await h.dispatch.call('Send', request({ template: 'typed', dataJson: JSON.stringify({ name: 'Ada', count: 2 }) }));
    assert.equal(response.status, 'queued');
  });
});

describe('idempotency', () => {
  test('a replay with the same fingerprint returns the first response and creates nothing', async () => {
    const key = randomUUID();
    const first = await h.dispatch.call('Send', request({ idempotencyKey: key, fingerprint: 'fp-1' }));
    const messages = await count('messages');
    const jobs = await h.jobsInStream();

    const replay = await h.dispatch.call('Send', request({ idempotencyKey: key.toUpperCase(), fingerprint: 'fp-1' }));
    assert.deepEqual(replay, { ...first, idempotentReplay: true, organizationAccepted: 0, replayableForMs: replay.replayableForMs });
    assert.equal(await count('messages'), messages);
    assert.equal(await h.jobsInStream(), jobs);
    assert.match(await h.registry.getSingleMetricAsString('notify_messages_replayed_total'), /notify_messages_replayed_total\{[^}]*\} 1/);

    const record = (
      await h.pool.query(
        'SELECT message_id, response, extract(epoch FROM expires_at - created_at)::int AS ttl FROM idempotency_keys WHERE idempotency_key = $1',
        [key],
      )
    ).rows[0];
    assert.equal(record.message_id, first.messageId);
    assert.deepEqual(record.response, { message_id: first.messageId, status: 'queued', celery_task_id: first.celeryTaskId, idempotent_replay: false });
    assert.equal(record.ttl, 86_400, 'the record lives NOTIFY_IDEMPOTENCY_TTL from acceptance');
  });

  test('a keyed answer says how long its record replays it: the TTL when accepted, what is left of it on a replay; nothing without a key', async () => {
    const key = randomUUID();
    const first = await h.dispatch.call('Send', request({ idempotencyKey: key, fingerprint: 'fp-life' }));
    assert.equal(first.replayableForMs, 86_400_000, 'a new record lives NOTIFY_IDEMPOTENCY_TTL from its transaction');
    assert.equal((await h.dispatch.call('Send', request())).replayableForMs, 0);

    // Five seconds of life left: a replay says so (less what the statement's start already used), never more.
    await h.pool.query(`UPDATE idempotency_keys SET expires_at = now() + interval '5 seconds' WHERE idempotency_key = $1`, [key]);
    const replay = await h.dispatch.call('Send', request({ idempotencyKey: key, fingerprint: 'fp-life' }));
    assert.equal(replay.idempotentReplay, true);
    assert.ok(replay.replayableForMs > 3_000 && replay.replayableForMs <= 5_000, `replayable for ${replay.replayableForMs} ms`);
  });

  test('the same key with a different request is refused as a mismatch', async () => {
    const key = randomUUID();
    await h.dispatch.call('Send', request({ idempotencyKey: key, fingerprint: 'fp-a' }));
    await assertRefused(h.dispatch.call('Send', request({ idempotencyKey: key, fingerprint: 'fp-b' })), status.FAILED_PRECONDITION, 'idempotency_key_mismatch');
  });

  test('a key whose first request is still in progress is refused as in use', async () => {
    const key = randomUUID();
    const holder = await h.pool.connect();
    try {
      await holder.query('BEGIN');
      await holder.query('SELECT pg_advisory_xact_lock($1::bigint)', [idempotencyLockKey(h.ids.projectId, key)]);
      await assertRefused(h.dispatch.call('Send', request({ idempotencyKey: key, fingerprint: 'fp' })), status.ABORTED, 'idempotency_key_in_use');
      await holder.query('ROLLBACK');
    } finally {
      holder.release();
    }
    const response = await h.dispatch.call('Send', request({ idempotencyKey: key, fingerprint: 'fp' }));
    assert.equal(response.idempotentReplay, false);
  });

  test('concurrent requests with one key create one message: the others replay or are refused as in use', async () => {
    const key = randomUUID();
    const results = await Promise.allSettled(Array.from({ length: 6 }, () => h.dispatch.call('Send', request({ idempotencyKey: key, fingerprint: 'fp' }))));
    const accepted = results.flatMap((result) => (result.status === 'fulfilled' ? [result.value] : []));
    const firsts = accepted.filter((response) => !response.idempotentReplay);
    assert.equal(firsts.length, 1);
    assert.ok(accepted.every((response) => response.messageId === firsts[0]?.messageId));
    for (const result of results) {
      if (result.status === 'rejected') assert.equal((result.reason as { reason: string }).reason, 'idempotency_key_in_use');
    }
    assert.equal(await count('messages WHERE idempotency_key = $1', [key]), 1);
  });

  test('an expired record no longer replays: the request is accepted anew', async () => {
    const key = randomUUID();
    const first = await h.dispatch.call('Send', request({ idempotencyKey: key, fingerprint: 'fp' }));
    await h.pool.query(`UPDATE idempotency_keys SET expires_at = now() - interval '1 second' WHERE idempotency_key = $1`, [key]);
    const second = await h.dispatch.call('Send', request({ idempotencyKey: key, fingerprint: 'other' }));
    assert.equal(second.idempotentReplay, false);
    assert.notEqual(second.messageId, first.messageId);
    const record = (await h.pool.query('SELECT message_id FROM idempotency_keys WHERE idempotency_key = $1', [key])).rows[0];
    assert.equal(record.message_id, second.messageId);
  });

  test('expired records are swept, live ones kept', async () => {
    const [expired, live] = [randomUUID(), randomUUID()];
    await h.dispatch.call('Send', request({ idempotencyKey: expired, fingerprint: 'fp' }));
    await h.dispatch.call('Send', request({ idempotencyKey: live, fingerprint: 'fp' }));
    await h.pool.query(`UPDATE idempotency_keys SET expires_at = now() - interval '1 second' WHERE idempotency_key = $1`, [expired]);
    assert.ok((await sweepExpiredIdempotencyRecords(h.pool, 1)) >= 1);
    assert.equal(await count('idempotency_keys WHERE idempotency_key = $1', [expired]), 0);
    assert.equal(await count('idempotency_keys WHERE idempotency_key = $1', [live]), 1);
    assert.equal(await count('idempotency_keys WHERE expires_at <= now()'), 0);
  });

  test("a live record the lock's statement read is judged at once; a key it saw no live record of is read again after the lock", async () => {
    // h.deps with a pool whose clients note the name of each idempotency statement they run (a send alone locks its
    // one key with the lock statement's one-row form, platform batchRows).
    const statements: string[] = [];
    const noting = <T extends object>(target: T): T =>
      new Proxy(target, {
        get: (object, property) => {
          const value: unknown = Reflect.get(object, property);
          if (property === 'query' && typeof value === 'function') {
            return (config: { name?: string } | string, ...rest: unknown[]) => {
              const name = typeof config === 'string' ? config : (config.name ?? '');
              if (name.startsWith('idempotency-')) statements.push(name);
              return (value as (...args: unknown[]) => unknown).call(object, config, ...rest);
            };
          }
          if (property === 'connect' && typeof value === 'function') return async () => noting(await (value as () => Promise<object>).call(object));
          return typeof value === 'function' ? (value as (...args: unknown[]) => unknown).bind(object) : value;
        },
      });
    const send = createSendHandler({ ...h.deps, pool: noting(h.pool) });
    const direct = h.decodedSendRequest;
    const key = randomUUID();

    const first = await send(direct({ idempotencyKey: key, fingerprint: 'fp' }));
    assert.deepEqual(statements.splice(0), ['idempotency-lock-many-one', 'idempotency-find-many', 'idempotency-save-many']);
    const replay = await send(direct({ idempotencyKey: key, fingerprint: 'fp' }));
    assert.deepEqual(replay, { ...first, idempotentReplay: true, organizationAccepted: 0, replayableForMs: replay.replayableForMs });
    assert.deepEqual(statements.splice(0), ['idempotency-lock-many-one']);
    await assert.rejects(send(direct({ idempotencyKey: key, fingerprint: 'other' })), { reason: 'idempotency_key_mismatch' });
    assert.deepEqual(statements.splice(0), ['idempotency-lock-many-one']);
    // An expired record is no answer: read again after the lock, then replaced by the new send.
    await h.pool.query(`UPDATE idempotency_keys SET expires_at = now() - interval '1 second' WHERE idempotency_key = $1`, [key]);
    const anew = await send(direct({ idempotencyKey: key, fingerprint: 'other' }));
    assert.equal(anew.idempotentReplay, false);
    assert.deepEqual(statements.splice(0), ['idempotency-lock-many-one', 'idempotency-find-many', 'idempotency-save-many']);
    await h.outboxEmptied();
  });

  test('a refused request stores nothing, so the key can be corrected and retried', async () => {
    const key = randomUUID();
    await assertRefused(
      h.dispatch.call('Send', request({ idempotencyKey: key, fingerprint: 'typo', template: 'welcom' })),
      status.NOT_FOUND,
      'template_not_found',
    );
    const response = await h.dispatch.call('Send', request({ idempotencyKey: key, fingerprint: 'fixed' }));
    assert.equal(response.idempotentReplay, false);
  });
});

describe('the fields the gateway refused (check 11), judged after the key (check 10)', () => {
  /** A send whose body the gateway's validation refused: its fields are not sent. */
  const refusedFields = (overrides: Partial<dispatch.SendRequest> = {}): dispatch.SendRequest =>
    request({ template: '', to: '', dataJson: '', fieldsInvalid: true, ...overrides });

  test('without a key: fields_invalid at once, nothing written', async () => {
    const [messages, jobs] = [await count('messages'), await h.jobsInStream()];
    await assertRefused(h.dispatch.call('Send', refusedFields()), status.INVALID_ARGUMENT, 'fields_invalid');
    assert.deepEqual([await count('messages'), await h.jobsInStream()], [messages, jobs]);
  });

  test('with a free key: fields_invalid, nothing stored, and the key accepts the corrected request', async () => {
    const key = randomUUID();
    await assertRefused(h.dispatch.call('Send', refusedFields({ idempotencyKey: key, fingerprint: 'typo' })), status.INVALID_ARGUMENT, 'fields_invalid');
    assert.equal(await count('idempotency_keys WHERE idempotency_key = $1', [key]), 0);
    const corrected = await h.dispatch.call('Send', request({ idempotencyKey: key, fingerprint: 'fixed' }));
    assert.equal(corrected.idempotentReplay, false);
  });

  test('a key accepted with the same fingerprint replays the stored response, whatever the fields', async () => {
    const key = randomUUID();
    const first = await h.dispatch.call('Send', request({ idempotencyKey: key, fingerprint: 'fp-same' }));
    const messages = await count('messages');
    const replay = await h.dispatch.call('Send', refusedFields({ idempotencyKey: key.toUpperCase(), fingerprint: 'fp-same' }));
    assert.deepEqual(replay, { ...first, idempotentReplay: true, organizationAccepted: 0, replayableForMs: replay.replayableForMs });
    assert.equal(await count('messages'), messages);
  });

  test('a key accepted with another fingerprint is a mismatch, not fields_invalid', async () => {
    const key = randomUUID();
    await h.dispatch.call('Send', request({ idempotencyKey: key, fingerprint: 'fp-a' }));
    await assertRefused(
      h.dispatch.call('Send', refusedFields({ idempotencyKey: key, fingerprint: 'fp-b' })),
      status.FAILED_PRECONDITION,
      'idempotency_key_mismatch',
    );
  });

  test('a key in flight is in use, not fields_invalid', async () => {
    const key = randomUUID();
    const holder = await h.pool.connect();
    try {
      await holder.query('BEGIN');
      await holder.query('SELECT pg_advisory_xact_lock($1::bigint)', [idempotencyLockKey(h.ids.projectId, key)]);
      await assertRefused(h.dispatch.call('Send', refusedFields({ idempotencyKey: key, fingerprint: 'fp' })), status.ABORTED, 'idempotency_key_in_use');
      await holder.query('ROLLBACK');
    } finally {
      holder.release();
    }
    await assertRefused(h.dispatch.call('Send', refusedFields({ idempotencyKey: key, fingerprint: 'fp' })), status.INVALID_ARGUMENT, 'fields_invalid');
  });
});

describe("the organization's month count in Send's answer", () => {
  /** The organization's usage row this month, as the quota counts it. */
  const used = (): Promise<number> => h.usedThisMonth();

  test("a test key's send is stored and published marked as a test, answers 0 and counts nothing, even past the quota", async () => {
    const live = await h.dispatch.call('Send', request({ to: 'live@example.com' }));
    assert.equal((await h.pool.query<{ test: boolean }>('SELECT test FROM messages WHERE id = $1', [live.messageId])).rows[0]?.test, false);
    assert.equal('test' in (await h.lastJob()).job, false);
    const counted = await used();
    assert.equal(live.organizationAccepted, counted);

    // The quota used up by the live send: check 5 is the gateway's, and it judges test sends like any other; here, only the count.
    const response = await h.dispatch.call('Send', request({ test: true, to: 'test-mode@example.com', monthlyQuota: counted }));
    assert.equal(response.status, 'queued');
    assert.equal(response.organizationAccepted, 0);
    assert.equal(await used(), counted);
    assert.equal((await h.pool.query<{ test: boolean }>('SELECT test FROM messages WHERE id = $1', [response.messageId])).rows[0]?.test, true);
    const { job } = await h.lastJob();
    assert.equal(job.messageId, response.messageId);
    assert.equal(job.test, true);
  });

  test('each accepted send answers the count with itself included; a replay answers 0 and counts nothing', async () => {
    const before = await used();
    const key = randomUUID();
    const answers = [];
    for (let i = 0; i < 3; i += 1) answers.push((await h.dispatch.call('Send', request({ to: `count${i}@example.com` }))).organizationAccepted);
    answers.push((await h.dispatch.call('Send', request({ idempotencyKey: key, fingerprint: 'fp', monthlyQuota: before + 10 }))).organizationAccepted);
    assert.deepEqual(answers, [before + 1, before + 2, before + 3, before + 4]);
    assert.equal((await h.dispatch.call('Send', request({ idempotencyKey: key, fingerprint: 'fp' }))).organizationAccepted, 0);
    assert.equal(await used(), before + 4);
  });
});

describe('group commit', () => {
  const direct = (overrides: Partial<dispatch.SendRequest> = {}): dispatch.SendRequest__Output => h.decodedSendRequest(overrides);
  const settle = (send: ReturnType<typeof createSendHandler>, requests: dispatch.SendRequest__Output[]) => Promise.allSettled(requests.map((r) => send(r)));
  const reasonOf = (result: PromiseSettledResult<unknown>): string =>
    result.status === 'rejected' ? (result.reason as { reason: string }).reason : 'accepted';
  /** Rows written by one transaction share its id (xmin). */
  const transactionsOf = async (ids: number[]): Promise<number> =>
    (await h.pool.query<{ n: number }>('SELECT count(DISTINCT xmin::text)::int AS n FROM messages WHERE id = ANY($1::bigint[])', [ids])).rows[0]?.n ?? -1;

  test('sends made at once share one transaction, and each is judged on its own', async () => {
    const send = createSendHandler(h.deps);
    const messagesBefore = await count('messages');
    const key = randomUUID();
    const results = await settle(send, [
      direct({ to: 'one@example.com' }),
      direct({ template: 'missing' }),
      direct({ to: 'two@example.com', idempotencyKey: key, fingerprint: 'fp' }),
      direct({ template: 'dormant' }),
      direct({ to: 'two@example.com', idempotencyKey: key, fingerprint: 'fp' }),
      direct({ template: 'typed', dataJson: JSON.stringify({ name: 'Ada', count: 'many' }) }),
      direct({ to: 'three@example.com', template: 'typed', dataJson: JSON.stringify({ name: 'Ada', count: 3 }) }),
      direct({ template: '', to: '', dataJson: '', fieldsInvalid: true, idempotencyKey: randomUUID(), fingerprint: 'fp' }),
    ]);
    assert.deepEqual(results.map(reasonOf), [
      'accepted',
      'template_not_found',
      'accepted',
      'template_inactive',
      'idempotency_key_in_use',
      'data_invalid',
      'accepted',
      'fields_invalid',
    ]);
    const ids = results.flatMap((result) => (result.status === 'fulfilled' ? [result.value.messageId] : []));
    assert.equal(await transactionsOf(ids), 1);
    assert.equal(await count('messages'), messagesBefore + 3, 'refused sends write nothing');
    const recipients = await h.pool.query<{ recipient: string; template_slug: string }>(
      'SELECT recipient, template_slug FROM messages WHERE id = ANY($1::bigint[]) ORDER BY id',
      [ids],
    );
    assert.deepEqual(
      recipients.rows.map((row) => `${row.recipient} ${row.template_slug}`),
      ['one@example.com welcome', 'two@example.com welcome', 'three@example.com typed'],
    );
    // Each accepted send of the batch answers the organization's count after the whole batch.
    const counts = new Set(results.flatMap((result) => (result.status === 'fulfilled' ? [result.value.organizationAccepted] : [])));
    assert.equal(counts.size, 1);
    assert.equal(await count('message_events WHERE message_id = ANY($1::bigint[]) AND state = $2', [ids, 'queued']), 3);
    assert.equal(await count('idempotency_keys WHERE idempotency_key = $1', [key]), 1);
    await h.outboxEmptied();
  });

  test('sends that arrive while a transaction runs wait for it and go together in the next one', async () => {
    const send = createSendHandler(h.deps);
    const first = send(direct({ to: 'first@example.com' }));
    // Each in a turn of the event loop of its own, while the first send's transaction makes its seven round trips to
    // PostgreSQL (a turn handles at most one of its replies, so three turns cannot see it commit).
    const waiting: Promise<dispatch.SendResponse__Output>[] = [];
    for (let index = 0; index < 3; index += 1) {
      await new Promise((resolve) => setImmediate(resolve));
      waiting.push(send(direct({ to: `waiting-${index}@example.com` })));
    }
    const firstId = (await first).messageId;
    const waitingIds = (await Promise.all(waiting)).map((response) => response.messageId);
    assert.equal(await transactionsOf(waitingIds), 1, 'the sends that waited share one transaction');
    assert.equal(await transactionsOf([firstId, ...waitingIds]), 2, "and it is not the first send's");
    await h.outboxEmptied();
  });

  test('a transaction stuck on a lock holds the sends that arrive after it only until it has run 50 ms: the next starts beside it', async () => {
    const send = createSendHandler(h.deps);
    // Hold the organization's usage row: the first send's transaction then waits on it, before its commit.
    const holder = await h.pool.connect();
    try {
      await holder.query('BEGIN');
      await holder.query(
        `INSERT INTO organization_usage (organization_id, month, accepted) VALUES ($1, date_trunc('month', now() AT TIME ZONE 'UTC')::date, 0)
         ON CONFLICT (organization_id, month) DO UPDATE SET accepted = organization_usage.accepted`,
        [h.ids.organizationId],
      );
      let stuckSettled = false;
      const stuck = send(direct({ to: 'stuck@example.com' })).finally(() => {
        stuckSettled = true;
      });
      for (let waited = 0; (await count(`pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock'`)) === 0; waited += 10) {
        assert.ok(waited < 2_000, 'the first send waits on the usage row');
        await new Promise((resolve) => setTimeout(resolve, 10));
      }
      // A test key's send counts no usage, so nothing of its own waits on the lock: only the stuck transaction could.
      const held = new Promise<'held'>((resolve) => setTimeout(() => resolve('held'), 2_000).unref());
      const beside = await Promise.race([send(direct({ to: 'beside@example.com', test: true })), held]);
      assert.ok(beside !== 'held', 'accepted while the lock is still held, not after');
      assert.equal(beside.status, 'queued');
      assert.equal(stuckSettled, false, 'while the first send still waits');
      await holder.query('COMMIT');
      assert.equal((await stuck).status, 'queued');
    } finally {
      await holder.query('ROLLBACK').catch(() => undefined);
      holder.release();
    }
    await h.outboxEmptied();
  });

  test('a send the database refuses fails alone: the others of its batch are accepted', async () => {
    const send = createSendHandler(h.deps);
    // PostgreSQL's jsonb cannot hold U+0000, which JSON can: a value only the database finds wrong.
    const results = await settle(send, [
      direct({ to: 'before@example.com' }),
      direct({ to: 'nul@example.com', dataJson: '{"name":"\\u0000"}' }),
      direct({ to: 'after@example.com' }),
    ]);
    assert.deepEqual(
      results.map((result) => result.status),
      ['fulfilled', 'rejected', 'fulfilled'],
    );
    // Tried alone, the send is refused for its data (the gateway's 422), not as an internal error.
    assert.deepEqual(results.map(reasonOf), ['accepted', 'data_unstorable', 'accepted']);
    const ids = results.flatMap((result) => (result.status === 'fulfilled' ? [result.value.messageId] : []));
    assert.equal(await count('messages WHERE id = ANY($1::bigint[])', [ids]), 2);
    assert.equal(await count(`messages WHERE recipient = 'nul@example.com'`), 0);
  });

  test('the quota is shared out in arrival order within a batch', async () => {
    const send = createSendHandler(h.deps);
    const used = await h.usedThisMonth();
    const quota = used + 2;
    const key = randomUUID();
    const results = await settle(send, [
      ...Array.from({ length: 3 }, (_, i) => ({ ...direct({ to: `q${i}@example.com` }), monthlyQuota: quota })),
      { ...direct({ to: 'q3@example.com', idempotencyKey: key, fingerprint: 'fp' }), monthlyQuota: quota },
    ]);
    assert.deepEqual(results.map(reasonOf), ['accepted', 'accepted', 'plan_blocked', 'plan_blocked']);
    // Cut short by the quota, the count is exactly the quota: the gateway stops the next requests at check 5.
    assert.deepEqual(
      results.flatMap((result) => (result.status === 'fulfilled' ? [result.value.organizationAccepted] : [])),
      [quota, quota],
    );
    // The refused sends' rows were written in the batch's transaction, then removed with everything that hangs off them.
    assert.equal(await count(`messages WHERE recipient IN ('q2@example.com', 'q3@example.com')`), 0);
    assert.equal(await count('idempotency_keys WHERE idempotency_key = $1', [key]), 0);
    await h.outboxEmptied();
  });
});

describe('refusals', () => {
  test('an unknown template slug is NOT_FOUND', async () => {
    await assertRefused(h.dispatch.call('Send', request({ template: 'nope' })), status.NOT_FOUND, 'template_not_found');
  });

  test('a template of another project is NOT_FOUND', async () => {
    await assertRefused(h.dispatch.call('Send', request({ template: 'elsewhere' })), status.NOT_FOUND, 'template_not_found');
  });

  test('an inactive template is FAILED_PRECONDITION', async () => {
    await assertRefused(h.dispatch.call('Send', request({ template: 'dormant' })), status.FAILED_PRECONDITION, 'template_inactive');
  });

  test('data breaking the template schema is INVALID_ARGUMENT with a message per variable', async () => {
    const error = await assertRefused(
      h.dispatch.call('Send', request({ template: 'typed', dataJson: JSON.stringify({ count: 1.5 }) })),
      status.INVALID_ARGUMENT,
      'data_invalid',
    );
    assert.deepEqual([...error.fields].sort(), [
      '{"path":"count","keyword":"type","params":{"type":"integer"}}',
      '{"path":"name","keyword":"required","params":{}}',
    ]);
  });

  test("a message whose job (data with the template's texts) could not fit in a NATS message is RESOURCE_EXHAUSTED and writes nothing", async () => {
    const maxPayload = h.nats.info?.max_payload ?? 0;
    assert.ok(maxPayload > 0, 'the NATS server tells its max_payload');
    const [messages, outbox, jobs] = [await count('messages'), await count('outbox'), await h.jobsInStream()];
    const name = 'x'.repeat(maxPayload);
    const error = await assertRefused(h.dispatch.call('Send', request({ dataJson: JSON.stringify({ name }) })), status.RESOURCE_EXHAUSTED, 'payload_too_large');
    assert.ok(
      Number(error.fields[0]) < maxPayload && Number(error.fields[0]) > maxPayload / 2,
      `the limit ${error.fields[0]} is the server's max_payload less the job's envelope`,
    );
    assert.deepEqual([await count('messages'), await count('outbox'), await h.jobsInStream()], [messages, outbox, jobs]);
    // At the limit it is accepted, and its job reaches the stream rather than waiting in the outbox for good.
    const fits = Number(error.fields[0]) - Buffer.byteLength('Hello {{ name }}<p>Hi {{ name }}</p>Hi {{ name }}') - Buffer.byteLength('{"name":""}');
    const accepted = await h.dispatch.call('Send', request({ dataJson: JSON.stringify({ name: 'y'.repeat(fits) }) }));
    await h.outboxEmptied();
    assert.equal((await h.lastJob()).job.messageId, accepted.messageId);
  });

  test('a malformed request is INVALID_ARGUMENT naming each fault', async () => {
    const error = await assertRefused(
      h.dispatch.call('Send', request({ dataJson: '[1]', idempotencyKey: 'not-a-uuid', fingerprint: 'fp', to: '' })),
      status.INVALID_ARGUMENT,
      'invalid_argument',
    );
    assert.deepEqual(error.fields, ['to: must be one email address', 'data: must be a JSON object', 'idempotency_key: must be a UUID']);
  });

  test('Send refuses the admin token, which may only list messages', async () => {
    const client = new GrpcClient(dispatchProto.DispatchService.service, h.address, { token: h.callers.admin.token, deadlineMs: 2_000 });
    try {
      await assertRefused(client.call('Send', request()), status.PERMISSION_DENIED, 'permission_denied');
      assert.ok(Array.isArray((await client.call('ListMessages', { projectId: h.ids.projectId, state: '', limit: 1, beforeId: 0 })).messages));
    } finally {
      client.close();
    }
  });
});
