// Idempotency records: the first accepted response of a (project, Idempotency-Key), kept for NOTIFY_IDEMPOTENCY_TTL,
// and the transaction-scoped advisory lock that makes a second request with the same key wait its turn or be refused.
import { createHash } from 'node:crypto';
import type { PoolClient } from '@notify/platform/database';

/** The 202 body as the public API returns it (snake_case), stored so a replay answers exactly the same. */
export interface StoredResponse {
  message_id: number;
  status: string;
  celery_task_id: string;
  idempotent_replay: boolean;
}

export interface IdempotencyRecord {
  readonly fingerprint: string;
  readonly response: StoredResponse;
  readonly expired: boolean;
}

/**
 * The advisory lock's 64-bit key: the first 8 bytes of SHA-256 over a namespaced (project, key), as a signed bigint
 * in decimal. The namespace keeps it apart from other advisory locks on the same database (node-pg-migrate's).
 */
export function idempotencyLockKey(projectId: number, idempotencyKey: string): string {
  const digest = createHash('sha256').update(`notify.idempotency:${projectId}:${idempotencyKey.toLowerCase()}`).digest();
  return digest.readBigInt64BE(0).toString();
}

/**
 * Takes the key's lock for the rest of the transaction without waiting. False means another request with the same
 * key is being processed right now: the caller answers "in use" rather than queueing behind it.
 */
export async function tryLockIdempotencyKey(client: PoolClient, projectId: number, idempotencyKey: string): Promise<boolean> {
  const result = await client.query<{ locked: boolean }>({
    name: 'idempotency-lock',
    text: 'SELECT pg_try_advisory_xact_lock($1::bigint) AS locked',
    values: [idempotencyLockKey(projectId, idempotencyKey)],
  });
  return result.rows[0]?.locked === true;
}

export async function findIdempotencyRecord(client: PoolClient, projectId: number, idempotencyKey: string): Promise<IdempotencyRecord | undefined> {
  const result = await client.query<{ fingerprint: string; response: StoredResponse; expired: boolean }>({
    name: 'idempotency-find',
    text: `SELECT fingerprint, response, expires_at <= now() AS expired
             FROM idempotency_keys WHERE project_id = $1 AND idempotency_key = $2`,
    values: [projectId, idempotencyKey],
  });
  return result.rows[0];
}

export async function deleteIdempotencyRecord(client: PoolClient, projectId: number, idempotencyKey: string): Promise<void> {
  await client.query({
    name: 'idempotency-delete',
    text: 'DELETE FROM idempotency_keys WHERE project_id = $1 AND idempotency_key = $2',
    values: [projectId, idempotencyKey],
  });
}

export async function insertIdempotencyRecord(
  client: PoolClient,
  record: { projectId: number; idempotencyKey: string; fingerprint: string; messageId: number; response: StoredResponse; ttlMs: number },
): Promise<void> {
  await client.query({
    name: 'idempotency-insert',
    text: `INSERT INTO idempotency_keys (project_id, idempotency_key, fingerprint, message_id, response, expires_at)
           VALUES ($1, $2, $3, $4, $5, now() + $6 * interval '1 millisecond')`,
    values: [record.projectId, record.idempotencyKey, record.fingerprint, record.messageId, JSON.stringify(record.response), record.ttlMs],
  });
}
