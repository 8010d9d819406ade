// Each project's suppression list (docs/contract.md, "Recipients that must not be mailed"): addresses that must not be
// mailed, with why, since when and the message that caused it. The send path looks its recipients up inside the
// transaction that accepts them; operators list, add and remove entries.
import { createHash } from 'node:crypto';
import type { Pool, PoolClient } from '@notify/platform/database';

export const suppressionReasons = ['hard_bounce', 'complaint', 'unsubscribed', 'manual'] as const;
export type SuppressionReason = (typeof suppressionReasons)[number];

export interface Suppression {
  readonly projectId: number;
  /** Normalized (normalizeAddress). */
  readonly address: string;
  readonly reason: SuppressionReason;
  readonly messageId: number | null;
  readonly createdAt: Date;
}

/**
 * An address as the list compares it: the domain case-insensitively, the local part as given (RFC 5321 lets a server
 * tell `Ana` from `ana`; most do not, but merging them would suppress someone else).
 */
export function normalizeAddress(address: string): string {
  const at = address.lastIndexOf('@');
  return at < 0 ? address : `${address.slice(0, at)}@${address.slice(at + 1).toLowerCase()}`;
}

const columns = `project_id AS "projectId", address, reason, message_id AS "messageId", created_at AS "createdAt"`;

/**
 * What an erasure keeps of a suppressed address (docs/operations.md, "Erasure"): a SHA-256 of the project and the
 * normalized address, so the address stays refused without being stored. It confirms a guessed address; it does not
 * reveal one.
 */
export function erasedAddress(projectId: number, address: string): string {
  return `sha256:${createHash('sha256')
    .update(`${projectId}:${normalizeAddress(address)}`)
    .digest('hex')}`;
}

/**
 * The suppressions of these (project, address) pairs, keyed by `suppressionKey`: one primary-key lookup per pair, and
 * one more for its erased form (an entry in clear wins over its hash).
 */
export async function findSuppressions(client: PoolClient, wanted: readonly { projectId: number; address: string }[]): Promise<Map<string, Suppression>> {
  if (wanted.length === 0) return new Map();
  const clearKeyOfErased = new Map(
    wanted.map((each) => [suppressionKey(each.projectId, erasedAddress(each.projectId, each.address)), suppressionKey(each.projectId, each.address)]),
  );
  const result = await client.query<Suppression>({
    name: 'suppression-find-many',
    text: `SELECT ${columns} FROM suppressions
            WHERE (project_id, address) IN (SELECT * FROM unnest($1::bigint[], $2::text[]))`,
    values: [
      wanted.flatMap((each) => [each.projectId, each.projectId]),
      wanted.flatMap((each) => [normalizeAddress(each.address), erasedAddress(each.projectId, each.address)]),
    ],
  });
  const found = new Map<string, Suppression>();
  for (const row of result.rows) {
    const own = suppressionKey(row.projectId, row.address);
    const clearKey = clearKeyOfErased.get(own);
    if (clearKey === undefined) found.set(own, row);
    else if (!found.has(clearKey)) found.set(clearKey, row);
  }
  return found;
}

export const suppressionKey = (projectId: number, address: string): string => `${projectId}:${normalizeAddress(address)}`;

/**
 * Adds an entry; an address already suppressed keeps its first reason and time, whether it is listed in clear or, since
 * an erasure, as its hash (erasedAddress). The address of an erased recipient (`erased`: the message it comes with
 * was erased) is listed as its hash only. Returns the entry as stored, and whether this call added it.
 */
export async function addSuppression(
  client: Pool | PoolClient,
  entry: { projectId: number; address: string; reason: SuppressionReason; messageId?: number | undefined; erased?: boolean },
): Promise<Suppression & { added: boolean }> {
  const hashed = erasedAddress(entry.projectId, entry.address);
  const result = await client.query<Suppression & { added: boolean }>({
    name: 'suppression-add',
    text: `WITH listed AS (SELECT ${columns} FROM suppressions WHERE project_id = $1 AND address IN ($2, $5) ORDER BY address = $5 LIMIT 1),
           added AS (
             INSERT INTO suppressions (project_id, address, reason, message_id)
             SELECT $1, CASE WHEN $6 THEN $5 ELSE $2 END, $3, $4 WHERE NOT EXISTS (SELECT 1 FROM listed)
             ON CONFLICT (project_id, address) DO NOTHING RETURNING ${columns})
           SELECT *, true AS added FROM added
           UNION ALL SELECT *, false FROM listed`,
    values: [entry.projectId, normalizeAddress(entry.address), entry.reason, entry.messageId ?? null, hashed, entry.erased ?? false],
  });
  const [row] = result.rows;
  if (!row) throw new Error('the suppression was neither added nor found');
  return row;
}

/** Removes an entry; false when the address was not suppressed. */
export async function removeSuppression(pool: Pool, projectId: number, address: string): Promise<boolean> {
  const result = await pool.query({
    name: 'suppression-remove',
    text: 'DELETE FROM suppressions WHERE project_id = $1 AND address = $2',
    values: [projectId, normalizeAddress(address)],
  });
  return (result.rowCount ?? 0) > 0;
}

/** A project's entries, newest first, only those whose address contains `search` when it is given; at most `limit`. */
export async function listSuppressions(pool: Pool, query: { projectId: number; search: string; limit: number }): Promise<Suppression[]> {
  const result = await pool.query<Suppression>({
    name: 'suppression-list',
    text: `SELECT ${columns} FROM suppressions
            WHERE project_id = $1 AND ($2 = '' OR strpos(lower(address), lower($2)) > 0)
            ORDER BY created_at DESC, address LIMIT $3`,
    values: [query.projectId, query.search, query.limit],
  });
  return result.rows;
}

/**
 * Suppresses the recipients of these messages, whose delivery failed on a hard bounce (`reason` hard_bounce), in the
 * caller's transaction, normalized as normalizeAddress does (the domain after the last `@` in lower case). An address
 * already listed keeps its first entry. Returns the messages whose address this listed.
 */
export async function suppressHardBounces(client: PoolClient, messageIds: readonly number[]): Promise<Set<number>> {
  if (messageIds.length === 0) return new Set();
  const added = await client.query<{ messageId: number }>({
    name: 'suppression-hard-bounces',
    text: `INSERT INTO suppressions (project_id, address, reason, message_id)
           SELECT project_id, left(recipient, length(recipient) - length(substring(recipient from '[^@]*$'))) || lower(substring(recipient from '[^@]*$')),
                  'hard_bounce', id
             FROM messages WHERE id = ANY($1::bigint[])
           ON CONFLICT (project_id, address) DO NOTHING
           RETURNING message_id AS "messageId"`,
    values: [messageIds],
  });
  return new Set(added.rows.map((row) => Number(row.messageId)));
}
