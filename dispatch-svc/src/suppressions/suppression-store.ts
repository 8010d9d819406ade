// Each project's suppression list (docs/contract.md, "Recipients that must not be mailed"): addresses that must not be
// mailed, with why, since when and the message that caused it. The send path looks its recipients up inside the
// transaction that accepts them; operators list, add and remove entries.
import { createHash } from 'node:crypto';
import { type Pool, type PoolClient, withTransaction } from '@notify/platform/database';
import type { DataKey } from '@notify/platform/mail';
import { erasedEntryPattern, type SuppressionReason, suppressionReasons } from '@notify/proto';

export { erasedEntryPattern, type SuppressionReason, suppressionReasons };

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

/** SHA-256 of the project and the normalized address: what an erased entry's keyed hash is taken of. */
function addressDigest(projectId: number, address: string): Buffer {
  return createHash('sha256')
    .update(`${projectId}:${normalizeAddress(address)}`)
    .digest();
}

const keyedPrefix = 'hmac-sha256:';
const unkeyedPrefix = 'sha256:';

/**
 * What an erasure keeps of a suppressed address (docs/operations.md, "Erasure"): an HMAC-SHA256, under
 * NOTIFY_DATA_KEY's erasure key, of the SHA-256 of the project and the normalized address, so the address stays
 * refused without being stored, and whoever reads the database without the key cannot confirm a guess by hashing it.
 */
export function erasedAddress(dataKey: DataKey, projectId: number, address: string): string {
  return keyedPrefix + dataKey.sign('erasure', addressDigest(projectId, address)).toString('hex');
}

/**
 * The form erasures kept before they were keyed (`sha256:` and the digest alone), still looked up until
 * keyUnkeyedErasedAddresses replaces it: a replica of the previous release may write one during a rolling upgrade.
 */
function unkeyedErasedAddress(projectId: number, address: string): string {
  return unkeyedPrefix + addressDigest(projectId, address).toString('hex');
}

/** The forms an address may be listed under: in clear, as its keyed hash, as its unkeyed hash. */
function listedForms(dataKey: DataKey, projectId: number, address: string): [string, string, string] {
  return [normalizeAddress(address), erasedAddress(dataKey, projectId, address), unkeyedErasedAddress(projectId, address)];
}

/**
 * The suppressions of these (project, address) pairs, keyed by `suppressionKey`: one primary-key lookup per form of
 * each pair (an entry in clear wins over its hashes).
 */
export async function findSuppressions(
  client: PoolClient,
  dataKey: DataKey,
  wanted: readonly { projectId: number; address: string }[],
): Promise<Map<string, Suppression>> {
  if (wanted.length === 0) return new Map();
  const forms = wanted.map((each) => ({ ...each, forms: listedForms(dataKey, each.projectId, each.address) }));
  const clearKeyOfErased = new Map(
    forms.flatMap((each) => each.forms.slice(1).map((hash) => [suppressionKey(each.projectId, hash), suppressionKey(each.projectId, each.address)] as const)),
  );
  const result = await client.query<Suppression>({
    name: 'suppression-find-many',
    text: `SELECT ${columns} FROM suppressions
            WHERE (project_id, address) IN (SELECT * FROM unnest($1::bigint[], $2::text[]))`,
    values: [forms.flatMap((each) => each.forms.map(() => each.projectId)), forms.flatMap((each) => each.forms)],
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
  dataKey: DataKey,
  entry: { projectId: number; address: string; reason: SuppressionReason; messageId?: number | undefined; erased?: boolean },
): Promise<Suppression & { added: boolean }> {
  const [clear, keyed, unkeyed] = listedForms(dataKey, entry.projectId, entry.address);
  const result = await client.query<Suppression & { added: boolean }>({
    name: 'suppression-add',
    text: `WITH listed AS (SELECT ${columns} FROM suppressions WHERE project_id = $1 AND address IN ($2, $5, $7) ORDER BY address <> $2 LIMIT 1),
           added AS (
             INSERT INTO suppressions (project_id, address, reason, message_id)
             SELECT $1, CASE WHEN $6 THEN $5 ELSE $2 END, $3, $4 WHERE NOT EXISTS (SELECT 1 FROM listed)
             ON CONFLICT (project_id, address) DO NOTHING RETURNING ${columns})
           SELECT *, true AS added FROM added
           UNION ALL SELECT *, false FROM listed`,
    values: [entry.projectId, clear, entry.reason, entry.messageId ?? null, keyed, entry.erased ?? false, unkeyed],
  });
  const [row] = result.rows;
  if (!row) throw new Error('the suppression was neither added nor found');
  return row;
}

/**
 * Adds `addresses` by hand (`manual`) in one statement, each answered in the order given: its new entry (added), or the
 * entry that already lists it in clear or as an erasure's hash (not added). An address given twice is added once.
 */
export async function addManualSuppressions(
  client: PoolClient,
  dataKey: DataKey,
  projectId: number,
  addresses: readonly string[],
): Promise<(Suppression & { added: boolean })[]> {
  const forms = addresses.map((address) => listedForms(dataKey, projectId, address));
  const distinct = [...new Map(forms.map((form) => [form[0], form])).values()];
  const { rows } = await client.query<Suppression & { added: boolean; clear: string }>({
    name: 'suppression-add-manual',
    text: `WITH wanted AS (SELECT * FROM unnest($2::text[], $3::text[], $4::text[]) AS w (clear, keyed, unkeyed)),
           listed AS (
             SELECT DISTINCT ON (w.clear) w.clear, s.project_id, s.address, s.reason, s.message_id, s.created_at
               FROM wanted w JOIN suppressions s ON s.project_id = $1 AND s.address IN (w.clear, w.keyed, w.unkeyed)
              ORDER BY w.clear, s.address <> w.clear),
           added AS (
             INSERT INTO suppressions (project_id, address, reason)
             SELECT $1, w.clear, 'manual' FROM wanted w WHERE NOT EXISTS (SELECT 1 FROM listed l WHERE l.clear = w.clear)
             ON CONFLICT (project_id, address) DO NOTHING RETURNING ${columns})
           SELECT added.address AS clear, added.*, true AS added FROM added
           UNION ALL SELECT clear, project_id AS "projectId", address, reason, message_id AS "messageId", created_at AS "createdAt", false FROM listed`,
    values: [projectId, distinct.map((form) => form[0]), distinct.map((form) => form[1]), distinct.map((form) => form[2])],
  });
  const byClear = new Map(rows.map(({ clear, ...entry }) => [clear, entry]));
  const seen = new Set<string>();
  return forms.map(([clear]) => {
    const entry = byClear.get(clear);
    // Added by a concurrent call between this statement's read and its insert: listed, though this call could not see it.
    if (!entry) throw new Error(`the suppression of ${clear} was neither added nor found`);
    const first = !seen.has(clear);
    seen.add(clear);
    return { ...entry, added: entry.added && first };
  });
}

/** Entries rekeyed per transaction. */
const rekeyBatch = 1_000;

/**
 * Replaces every unkeyed erased entry (`sha256:`, written before erasures were keyed) with its keyed form, keeping its
 * reason, cause and date; returns how many it replaced. The keyed form is the HMAC of the digest the unkeyed one
 * shows, so no address is needed. Replicas may run it at once: rows are locked, and one already replaced is skipped.
 */
export async function keyUnkeyedErasedAddresses(pool: Pool, dataKey: DataKey): Promise<number> {
  let replaced = 0;
  for (;;) {
    const count = await withTransaction(pool, async (client) => {
      const { rows } = await client.query<{ projectId: number; address: string }>({
        name: 'suppression-unkeyed',
        text: `SELECT project_id AS "projectId", address FROM suppressions WHERE address ~ '^sha256:[0-9a-f]{64}$'
                ORDER BY project_id, address LIMIT $1 FOR UPDATE SKIP LOCKED`,
        values: [rekeyBatch],
      });
      if (rows.length === 0) return 0;
      const keyed = rows.map((row) => keyedPrefix + dataKey.sign('erasure', Buffer.from(row.address.slice(unkeyedPrefix.length), 'hex')).toString('hex'));
      await client.query({
        name: 'suppression-rekey',
        text: `WITH pairs AS (SELECT * FROM unnest($1::bigint[], $2::text[], $3::text[]) AS p (project_id, unkeyed, keyed)),
               kept AS (
                 INSERT INTO suppressions (project_id, address, reason, message_id, created_at)
                 SELECT s.project_id, p.keyed, s.reason, s.message_id, s.created_at
                   FROM suppressions s JOIN pairs p ON s.project_id = p.project_id AND s.address = p.unkeyed
                 ON CONFLICT (project_id, address) DO NOTHING)
               DELETE FROM suppressions s USING pairs p WHERE s.project_id = p.project_id AND s.address = p.unkeyed`,
        values: [rows.map((row) => row.projectId), rows.map((row) => row.address), keyed],
      });
      return rows.length;
    });
    replaced += count;
    if (count < rekeyBatch) return replaced;
  }
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

/** Where a page of the public listing ends: the last entry's exact created_at (microseconds) and address. */
export interface SuppressionCursor {
  readonly createdMicros: bigint;
  readonly address: string;
}

const suppressionCursorVersion = 's1';

export function encodeSuppressionCursor(cursor: SuppressionCursor): string {
  return Buffer.from(`${suppressionCursorVersion}.${cursor.createdMicros}.${cursor.address}`, 'utf8').toString('base64url');
}

/** undefined for anything this service did not give out. */
export function decodeSuppressionCursor(text: string): SuppressionCursor | undefined {
  if (!/^[A-Za-z0-9_-]{1,400}$/.test(text)) return undefined;
  const match = /^s1\.(-?\d{1,19})\.(.{1,254})$/su.exec(Buffer.from(text, 'base64url').toString('utf8'));
  return match?.[1] && match[2] ? { createdMicros: BigInt(match[1]), address: match[2] } : undefined;
}

/**
 * A page of a project's entries for the public API, newest first by (created_at, address), filtered by reason and by
 * one address (listed in clear; its domain compared in any case, as normalizeAddress keeps it). Read in order through
 * suppressions_project_created_idx; one row more than `limit` says whether a next page exists.
 */
export async function readSuppressionPage(
  pool: Pool,
  query: { projectId: number; reason: string; address: string; limit: number; cursor?: SuppressionCursor | undefined },
): Promise<{ entries: Suppression[]; next?: SuppressionCursor }> {
  const { rows } = await pool.query<Suppression & { createdMicros: string }>({
    name: 'suppression-page',
    text: `SELECT ${columns}, (extract(epoch FROM created_at) * 1000000)::bigint::text AS "createdMicros" FROM suppressions
            WHERE project_id = $1 AND ($2 = '' OR reason = $2) AND ($3 = '' OR address = $3)
              AND ($4::bigint IS NULL OR (created_at, address) < ('epoch'::timestamptz + $4::bigint * interval '1 microsecond', $5))
            ORDER BY created_at DESC, address DESC LIMIT $6`,
    values: [
      query.projectId,
      query.reason,
      query.address === '' ? '' : normalizeAddress(query.address),
      query.cursor?.createdMicros.toString() ?? null,
      query.cursor?.address ?? '',
      query.limit + 1,
    ],
  });
  const entries = rows.slice(0, query.limit).map(({ createdMicros: _, ...entry }) => entry);
  const last = rows.length > query.limit ? rows[query.limit - 1] : undefined;
  return last ? { entries, next: { createdMicros: BigInt(last.createdMicros), address: last.address } } : { entries };
}
