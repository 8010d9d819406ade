// Idempotency records: the first accepted response of a (project, Idempotency-Key), kept for NOTIFY_IDEMPOTENCY_TTL,
// and the transaction-scoped advisory lock that makes a second request with the same key wait its turn or be refused.
import { hash } from 'node:crypto';
import type { Refusal } from '@notify/platform';
import { batchRows, type PoolClient, type RowColumn } from '@notify/platform/database';
import type { AcceptedBody } from '@notify/proto';

/**
 * What a record answers its replays with, as JSON: a send's 202 body, or a batch's whole answer (POST
 * /api/v1/send/batch/), each item's 202 body or refusal (which the gateway words) in the request's order. The
 * fingerprints of a send and a batch never match, so each reads only its own kind.
 */
export type StoredResponse = AcceptedBody | { readonly batch: readonly ({ readonly accepted: AcceptedBody } | { readonly refused: Refusal })[] };

export interface IdempotencyRecord {
  readonly fingerprint: string;
  readonly response: StoredResponse;
  readonly expired: boolean;
  /** How long the record stays live, counted from its transaction's start: a replay may be answered from memory that long (0 once expired). */
  readonly remainingMs: number;
}

/**
 * The advisory lock's 64-bit key: the first 8 bytes of SHA-256 over a namespaced (project, key), as a signed bigint
 * in decimal. The namespace keeps it apart from other advisory locks on the same database (node-pg-migrate's).
 */
export function idempotencyLockKey(projectId: number, idempotencyKey: string): string {
  const digest = hash('sha256', `notify.idempotency:${projectId}:${idempotencyKey.toLowerCase()}`, 'buffer');
  return digest.readBigInt64BE(0).toString();
}

/** One (project, Idempotency-Key) of a send; the key lower-cased. */
export interface ProjectKey {
  readonly projectId: number;
  readonly idempotencyKey: string;
}

/** A key's lock, and its live record if the lock's statement saw one. */
export interface KeyLock {
  /** False: another request with the same key is being processed right now. */
  readonly locked: boolean;
  /** The key's record, committed and not expired, as the lock's statement saw it; undefined when it saw none. */
  readonly live?: IdempotencyRecord;
}

/** A key as the rows of the lock's statement (batchRows): its lock, then the record's key. */
const lockColumns: readonly RowColumn<ProjectKey>[] = [
  { type: 'bigint', value: (key) => idempotencyLockKey(key.projectId, key.idempotencyKey) },
  { type: 'bigint', value: (key) => key.projectId },
  { type: 'uuid', value: (key) => key.idempotencyKey },
];

/**
 * The record's remaining life in milliseconds, from the transaction's start (`now()`): what the gateway may answer its
 * replays from memory for, counted from before it made the call, so never past the record's expiry whatever the clocks.
 */
const remainingMsColumn = `GREATEST(0, floor(extract(epoch FROM record.expires_at - now()) * 1000))::float8`;

/**
 * Takes each key's lock for the rest of the transaction without waiting (a key locked elsewhere: the caller answers
 * "in use" rather than queueing behind it), and reads its record in the same statement. That statement's snapshot
 * was taken before its locks, so it can miss a record that the lock's previous holder committed just before letting
 * go: a live record it sees is final (a record is replaced only once expired), and a replay needs nothing more; for a
 * key it saw no live record of, the caller reads again (findIdempotencyRecords) now that it holds the lock. In the
 * order given.
 */
export async function tryLockIdempotencyKeys(client: PoolClient, keys: readonly ProjectKey[]): Promise<KeyLock[]> {
  const wanted = batchRows('idempotency-lock-many', keys, lockColumns, { ordinality: true });
  const result = await client.query<{
    locked: boolean;
    fingerprint: string | null;
    response: StoredResponse | null;
    expired: boolean | null;
    remainingMs: number | null;
  }>({
    name: wanted.name,
    text: `SELECT pg_try_advisory_xact_lock(wanted.lock_key) AS locked, record.fingerprint, record.response, record.expires_at <= now() AS expired,
                  ${remainingMsColumn} AS "remainingMs"
             FROM ${wanted.rows} AS wanted(lock_key, project_id, idempotency_key, position)
             LEFT JOIN idempotency_keys record ON record.project_id = wanted.project_id AND record.idempotency_key = wanted.idempotency_key
            ORDER BY wanted.position`,
    values: wanted.values,
  });
  return result.rows.map(({ locked, fingerprint, response, expired, remainingMs }) =>
    fingerprint !== null && response !== null && expired === false
      ? { locked: locked === true, live: { fingerprint, response, expired, remainingMs: remainingMs ?? 0 } }
      : { locked: locked === true },
  );
}

export const projectKeyId = (key: ProjectKey): string => `${key.projectId}/${key.idempotencyKey}`;

/**
 * The records of these keys that exist, keyed by projectKeyId. Read in a statement of its own after the locks were
 * taken, so that it sees what a request that held one of them committed (see tryLockIdempotencyKeys).
 */
export async function findIdempotencyRecords(client: PoolClient, keys: readonly ProjectKey[]): Promise<Map<string, IdempotencyRecord>> {
  const result = await client.query<IdempotencyRecord & ProjectKey>({
    name: 'idempotency-find-many',
    text: `SELECT project_id AS "projectId", idempotency_key AS "idempotencyKey", fingerprint, response, expires_at <= now() AS expired,
                  ${remainingMsColumn} AS "remainingMs"
             FROM idempotency_keys record
            WHERE (project_id, idempotency_key) IN (SELECT * FROM unnest($1::bigint[], $2::uuid[]))`,
    values: [keys.map((key) => key.projectId), keys.map((key) => key.idempotencyKey)],
  });
  return new Map(result.rows.map((row) => [projectKeyId(row), row]));
}

export interface NewIdempotencyRecord extends ProjectKey {
  readonly fingerprint: string;
  /** Null for a batch's record, which belongs to no one message. */
  readonly messageId: number | null;
  readonly response: StoredResponse;
}

/**
 * Stores the records of newly accepted messages. The caller holds each key's lock and saw no live record, so a row
 * already there is an expired one, which this replaces.
 */
export async function saveIdempotencyRecords(client: PoolClient, records: readonly NewIdempotencyRecord[], ttlMs: number): Promise<void> {
  await client.query({
    name: 'idempotency-save-many',
    text: `INSERT INTO idempotency_keys (project_id, idempotency_key, fingerprint, message_id, response, expires_at)
           SELECT project_id, idempotency_key, fingerprint, message_id, response, now() + $6 * interval '1 millisecond'
             FROM unnest($1::bigint[], $2::uuid[], $3::text[], $4::bigint[], $5::jsonb[])
                  AS record(project_id, idempotency_key, fingerprint, message_id, response)
           ON CONFLICT (project_id, idempotency_key) DO UPDATE
              SET fingerprint = EXCLUDED.fingerprint, message_id = EXCLUDED.message_id, response = EXCLUDED.response,
                  created_at = EXCLUDED.created_at, expires_at = EXCLUDED.expires_at`,
    values: [
      records.map((r) => r.projectId),
      records.map((r) => r.idempotencyKey),
      records.map((r) => r.fingerprint),
      records.map((r) => r.messageId),
      records.map((r) => JSON.stringify(r.response)),
      ttlMs,
    ],
  });
}
