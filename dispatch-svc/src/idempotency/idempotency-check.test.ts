import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { after, before, test } from 'node:test';
import { status } from '@grpc/grpc-js';
import type { dispatch } from '@notify/proto';
import { assertRefused } from '../testing/assertions.ts';
import { startHarness, type Harness } from '../testing/harness.ts';
import { idempotencyLockKey } from './idempotency-store.ts';

let h: Harness;

before(async () => {
  h = await startHarness();
  await h.admin.call('PutTemplate', { projectId: h.ids.projectId, slug: 'welcome', subject: 'Hi', html: '<p>Hi</p>', text: 'Hi', variablesSchemaJson: '', active: true });
});

after(() => h.close());

function send(idempotencyKey: string, fingerprint: string): Promise<dispatch.SendResponse__Output> {
  const { projectId, organizationId, apiKeyId } = h.ids;
  return h.dispatch.call('Send', { projectId, organizationId, apiKeyId, template: 'welcome', to: 'ada@example.com', dataJson: '{}', idempotencyKey, fingerprint });
}

const check = (idempotencyKey: string, fingerprint: string) => h.dispatch.call('CheckIdempotency', { projectId: h.ids.projectId, idempotencyKey, fingerprint });
const count = async (sql: string): Promise<number> => (await h.pool.query<{ n: number }>(`SELECT count(*)::int AS n FROM ${sql}`)).rows[0]?.n ?? -1;

test('a key never used is free', async () => {
  assert.deepEqual(await check(randomUUID(), 'fp'), { replay: null });
});

test('a key accepted with the same fingerprint answers the stored response as a replay, in any case, writing nothing', async () => {
  const key = randomUUID();
  const first = await send(key, 'fp');
  const [messages, records, jobs] = [await count('messages'), await count('idempotency_keys'), await h.jobsInStream()];
  assert.deepEqual(await check(key.toUpperCase(), 'fp'), { replay: { ...first, idempotentReplay: true } });
  assert.deepEqual([await count('messages'), await count('idempotency_keys'), await h.jobsInStream()], [messages, records, jobs]);
  assert.match(await h.registry.getSingleMetricAsString('notify_messages_replayed_total'), /\} 1$/m);
});

test('a key accepted with another fingerprint is a mismatch', async () => {
  const key = randomUUID();
  await send(key, 'fp-a');
  await assertRefused(check(key, 'fp-b'), status.FAILED_PRECONDITION, 'idempotency_key_mismatch');
});

test('a key whose request is being processed is in use, and free again once that request is gone', async () => {
  const key = randomUUID();
  const holder = await h.pool.connect();
  try {
    await holder.query('BEGIN');
    await holder.query('SELECT pg_advisory_xact_lock($1::bigint)', [idempotencyLockKey(h.ids.projectId, key)]);
    await assertRefused(check(key, 'fp'), status.ABORTED, 'idempotency_key_in_use');
    await holder.query('ROLLBACK');
  } finally {
    holder.release();
  }
  assert.deepEqual(await check(key, 'fp'), { replay: null });
});

test('a key whose record expired is free for any request', async () => {
  const key = randomUUID();
  await send(key, 'fp');
  await h.pool.query(`UPDATE idempotency_keys SET expires_at = now() - interval '1 second' WHERE idempotency_key = $1`, [key]);
  assert.deepEqual(await check(key, 'other'), { replay: null });
});

test('the check leaves no lock behind: Send accepts right after it', async () => {
  const key = randomUUID();
  assert.deepEqual(await check(key, 'fp'), { replay: null });
  assert.equal((await send(key, 'fp')).idempotentReplay, false);
});

test('a malformed check is INVALID_ARGUMENT naming each fault', async () => {
  const error = await assertRefused(h.dispatch.call('CheckIdempotency', { projectId: 0, idempotencyKey: 'nope', fingerprint: '' }), status.INVALID_ARGUMENT, 'invalid_argument');
  assert.deepEqual(error.fields, ['project_id: must be a positive integer', 'idempotency_key: must be a UUID', 'fingerprint: is required']);
});
