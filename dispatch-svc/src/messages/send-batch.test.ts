import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { after, before, describe, test } from 'node:test';
import { status } from '@grpc/grpc-js';
import { GrpcClient } from '@notify/platform';
import { type dispatch, dispatchProto } from '@notify/proto';
import { assertRefused, refusal } from '@notify/test/harness/refusal.ts';
import { idempotencyLockKey } from '../idempotency/idempotency-store.ts';
import { type Harness, startHarness } from '../testing/harness.ts';

let h: Harness;

before(async () => {
  h = await startHarness();
  const put = (slug: string, active: boolean, variablesSchemaJson = '') =>
    h.admin.call('PutTemplate', {
      projectId: h.ids.projectId,
      slug,
      subject: 'Hello {{ name }}',
      html: '<p>Hi {{ name }}</p>',
      text: 'Hi {{ name }}',
      variablesSchemaJson,
      active,
    });
  await put('welcome', true);
  await put('dormant', false);
  await put('typed', true, JSON.stringify({ type: 'object', required: ['name'], properties: { name: { type: 'string' } } }));
});

after(() => h.close());

const item = (overrides: Partial<dispatch.SendRequest> = {}): dispatch.SendRequest => h.sendRequest({ monthlyQuota: 0, fieldsInvalid: false, ...overrides });

const batch = (messages: dispatch.SendRequest[], overrides: Partial<dispatch.SendBatchRequest> = {}) =>
  h.dispatch.call('SendBatch', { messages, ...overrides });

const outcomes = (response: dispatch.SendBatchResponse__Output): string[] =>
  response.results.map((result) => (result.accepted ? 'accepted' : (result.refused?.reason ?? '?')));
const acceptedIds = (response: dispatch.SendBatchResponse__Output): number[] =>
  response.results.flatMap((result) => (result.accepted ? [result.accepted.messageId] : []));

const count = async (sql: string, values: unknown[] = []): Promise<number> =>
  (await h.pool.query<{ n: number }>(`SELECT count(*)::int AS n FROM ${sql}`, values)).rows[0]?.n ?? -1;

const usedThisMonth = (): Promise<number> => h.usedThisMonth();

describe('SendBatch', () => {
  test('each item is judged like a send, and the accepted ones are committed in one transaction and published', async () => {
    const messagesBefore = await count('messages');
    const jobsBefore = await h.jobsInStream();
    const response = await batch([
      item({ to: 'one@example.com' }),
      item({ template: 'missing' }),
      item({ template: 'dormant' }),
      item({ template: '', to: '', dataJson: '', fieldsInvalid: true }),
      item({ template: 'typed', dataJson: JSON.stringify({ name: 7 }) }),
      item({ to: 'two@example.com', template: 'typed' }),
    ]);
    assert.deepEqual(outcomes(response), ['accepted', 'template_not_found', 'template_inactive', 'fields_invalid', 'data_invalid', 'accepted']);
    assert.deepEqual(
      response.results.map((result) => result.refused?.code ?? 0),
      [0, status.NOT_FOUND, status.FAILED_PRECONDITION, status.INVALID_ARGUMENT, status.INVALID_ARGUMENT, 0],
    );
    assert.ok((response.results[4]?.refused?.fields.length ?? 0) > 0, 'data_invalid names what the variables refused');
    assert.equal(response.idempotentReplay, false);
    const ids = acceptedIds(response);
    assert.equal(await count('messages'), messagesBefore + 2, 'refused items write nothing');
    const transactions = await h.pool.query<{ n: number }>('SELECT count(DISTINCT xmin::text)::int AS n FROM messages WHERE id = ANY($1::bigint[])', [ids]);
    assert.equal(transactions.rows[0]?.n, 1);
    assert.equal(await h.jobsInStream(), jobsBefore + 2);
    await h.outboxEmptied();
    assert.equal(response.organizationAccepted, await usedThisMonth());
  });

  test('throttled items are answered as such and never judged or written', async () => {
    const messagesBefore = await count('messages');
    const response = await batch([item({ to: 'a@example.com' }), item({ template: 'missing' }), item({ to: 'c@example.com' })], {
      throttledIndexes: [1, 2],
      retryAfterSeconds: 17,
    });
    assert.deepEqual(outcomes(response), ['accepted', 'throttled', 'throttled']);
    assert.deepEqual(response.results[2]?.refused, { code: status.RESOURCE_EXHAUSTED, reason: 'throttled', fields: ['17'] });
    assert.equal(await count('messages'), messagesBefore + 1);
  });

  test('the quota covers the first items and refuses the rest with plan_blocked, writing nothing of them', async () => {
    const quota = (await usedThisMonth()) + 2;
    const response = await batch(Array.from({ length: 4 }, (_, i) => item({ to: `quota${i}@example.com`, monthlyQuota: quota })));
    assert.deepEqual(outcomes(response), ['accepted', 'accepted', 'plan_blocked', 'plan_blocked']);
    assert.equal(response.organizationAccepted, quota);
    assert.equal(await count(`messages WHERE recipient IN ('quota2@example.com', 'quota3@example.com')`), 0);
    assert.equal(await usedThisMonth(), quota);
  });

  test('an item the database cannot store is refused alone; the others are still committed together', async () => {
    const response = await batch([item({ to: 'before@example.com' }), item({ dataJson: '{"name":"\\u0000"}' }), item({ to: 'after@example.com' })]);
    assert.deepEqual(outcomes(response), ['accepted', 'data_unstorable', 'accepted']);
    const ids = acceptedIds(response);
    const transactions = await h.pool.query<{ n: number }>('SELECT count(DISTINCT xmin::text)::int AS n FROM messages WHERE id = ANY($1::bigint[])', [ids]);
    assert.equal(transactions.rows[0]?.n, 1);
  });

  test("an Idempotency-Key replays the whole answer; another body, or a send's key, is a mismatch", async () => {
    const key = randomUUID();
    const messages = [item({ to: 'r1@example.com' }), item({ template: 'missing' })];
    const first = await batch(messages, { idempotencyKey: key, fingerprint: 'batch-fp' });
    const messagesAfter = await count('messages');
    const again = await batch(messages, { idempotencyKey: key, fingerprint: 'batch-fp' });
    assert.equal(again.idempotentReplay, true);
    assert.deepEqual(outcomes(again), outcomes(first));
    assert.deepEqual(
      again.results.map((result) => result.accepted?.messageId),
      first.results.map((result) => result.accepted?.messageId),
    );
    assert.equal(again.results[0]?.accepted?.idempotentReplay, true);
    assert.equal(again.organizationAccepted, 0);
    assert.equal(await count('messages'), messagesAfter, 'a replay writes nothing');
    await assertRefused(batch(messages, { idempotencyKey: key, fingerprint: 'other-fp' }), status.FAILED_PRECONDITION, 'idempotency_key_mismatch');
    await assertRefused(
      h.dispatch.call('Send', { ...item(), idempotencyKey: key, fingerprint: 'send-fp' }),
      status.FAILED_PRECONDITION,
      'idempotency_key_mismatch',
    );

    const sendKey = randomUUID();
    await h.dispatch.call('Send', { ...item(), idempotencyKey: sendKey, fingerprint: 'send-fp' });
    await assertRefused(batch(messages, { idempotencyKey: sendKey, fingerprint: 'batch-fp' }), status.FAILED_PRECONDITION, 'idempotency_key_mismatch');
  });

  test('a batch whose key is in flight is in use; a malformed batch is INVALID_ARGUMENT', async () => {
    const key = randomUUID();
    const holder = await h.pool.connect();
    try {
      await holder.query('BEGIN');
      await holder.query('SELECT pg_advisory_xact_lock($1::bigint)', [idempotencyLockKey(h.ids.projectId, key)]);
      await assertRefused(batch([item()], { idempotencyKey: key, fingerprint: 'fp' }), status.ABORTED, 'idempotency_key_in_use');
      await holder.query('ROLLBACK');
    } finally {
      holder.release();
    }
    await assertRefused(batch([]), status.INVALID_ARGUMENT, 'invalid_argument');
    await assertRefused(batch(Array.from({ length: 501 }, () => item())), status.INVALID_ARGUMENT, 'invalid_argument');
    await assertRefused(batch([item()], { throttledIndexes: [1] }), status.INVALID_ARGUMENT, 'invalid_argument');
    await assertRefused(batch([item({ idempotencyKey: randomUUID(), fingerprint: 'x' })]), status.INVALID_ARGUMENT, 'invalid_argument');
    await assertRefused(batch([item(), item({ projectId: h.ids.otherProjectId })]), status.INVALID_ARGUMENT, 'invalid_argument');
    await assertRefused(batch([item()], { idempotencyKey: randomUUID() }), status.INVALID_ARGUMENT, 'invalid_argument');
  });

  test('only the gateway may call it', async () => {
    const admin = new GrpcClient(dispatchProto.DispatchService.service, h.address, { token: h.callers.admin.token, deadlineMs: 5_000 });
    try {
      assert.equal((await refusal(admin.call('SendBatch', { messages: [item()] }))).status, status.PERMISSION_DENIED);
    } finally {
      admin.close();
    }
  });
});
