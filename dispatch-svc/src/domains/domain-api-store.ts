// Sending domains as the public API sees them (table sending_domains): each matched on its organization, with its DKIM
// record's verification state, the key a rotation keeps pending, and the verifier's queue (verify_requested_at).
// The sealed private keys are written here and never read back.
import type { Pool, PoolClient } from '@notify/platform/database';
import type { SendingDomainRow } from './domain-store.ts';

export type RecordStatus = 'pending' | 'verified' | 'failed';
export type RecordFailure = 'record_missing' | 'key_mismatch' | 'lookup_failed';

/** A DKIM record's state as the last look-up left it. */
export interface RecordCheck {
  readonly status: RecordStatus;
  readonly checkedAt: Date | null;
  readonly failure: RecordFailure | null;
}

export interface ApiDomainRow extends SendingDomainRow {
  readonly dkim: RecordCheck;
  /** The rotation's key, pending beside the signing one until its record verifies. */
  readonly next: (RecordCheck & { readonly selector: string; readonly publicKey: string }) | null;
  readonly verifyRequestedAt: Date | null;
}

interface FlatRow extends SendingDomainRow {
  dkimStatus: RecordStatus;
  dkimCheckedAt: Date | null;
  dkimFailure: RecordFailure | null;
  nextSelector: string | null;
  nextPublicKey: string | null;
  nextStatus: RecordStatus | null;
  nextCheckedAt: Date | null;
  nextFailure: RecordFailure | null;
  verifyRequestedAt: Date | null;
}

const columns = `id, organization_id AS "organizationId", domain, selector, public_key AS "publicKey", created_at AS "createdAt",
  dkim_status AS "dkimStatus", dkim_checked_at AS "dkimCheckedAt", dkim_failure AS "dkimFailure",
  next_selector AS "nextSelector", next_public_key AS "nextPublicKey", next_status AS "nextStatus",
  next_checked_at AS "nextCheckedAt", next_failure AS "nextFailure", verify_requested_at AS "verifyRequestedAt"`;

function toRow(flat: FlatRow): ApiDomainRow {
  const { dkimStatus, dkimCheckedAt, dkimFailure, nextSelector, nextPublicKey, nextStatus, nextCheckedAt, nextFailure, ...rest } = flat;
  return {
    ...rest,
    dkim: { status: dkimStatus, checkedAt: dkimCheckedAt, failure: dkimFailure },
    next:
      nextSelector !== null && nextPublicKey !== null && nextStatus !== null
        ? { selector: nextSelector, publicKey: nextPublicKey, status: nextStatus, checkedAt: nextCheckedAt, failure: nextFailure }
        : null,
  };
}

export async function listOrganizationDomains(pool: Pool, organizationId: number): Promise<ApiDomainRow[]> {
  const { rows } = await pool.query<FlatRow>({
    name: 'api-domain-list',
    text: `SELECT ${columns} FROM sending_domains WHERE organization_id = $1 ORDER BY domain`,
    values: [organizationId],
  });
  return rows.map(toRow);
}

/** The organization's domain `id`, locked for the transaction when `forUpdate`; undefined for any other id. */
export async function findOrganizationDomain(db: Pool | PoolClient, organizationId: number, id: number, forUpdate = false): Promise<ApiDomainRow | undefined> {
  const { rows } = await db.query<FlatRow>({
    name: forUpdate ? 'api-domain-find-locked' : 'api-domain-find',
    text: `SELECT ${columns} FROM sending_domains WHERE id = $1 AND organization_id = $2${forUpdate ? ' FOR UPDATE' : ''}`,
    values: [id, organizationId],
  });
  return rows[0] && toRow(rows[0]);
}

/**
 * Queues the domain for the verifier (an earlier request still queued keeps its place); undefined for another id. The
 * time is kept to the millisecond, as a JS Date holds it, so storeChecks can tell it from a later request.
 */
export async function requestVerification(client: PoolClient, organizationId: number, id: number): Promise<ApiDomainRow | undefined> {
  const { rows } = await client.query<FlatRow>({
    name: 'api-domain-verify-request',
    text: `UPDATE sending_domains SET verify_requested_at = coalesce(verify_requested_at, date_trunc('milliseconds', now()))
            WHERE id = $1 AND organization_id = $2 RETURNING ${columns}`,
    values: [id, organizationId],
  });
  return rows[0] && toRow(rows[0]);
}

/** Sets the rotation's key (replacing one still pending), its record `pending`. */
export async function setNextKey(
  client: PoolClient,
  id: number,
  key: { selector: string; publicKey: string; sealedPrivateKey: string },
): Promise<ApiDomainRow> {
  const { rows } = await client.query<FlatRow>({
    name: 'api-domain-next-key',
    text: `UPDATE sending_domains SET next_selector = $2, next_public_key = $3, next_sealed_private_key = $4, next_status = 'pending',
                  next_checked_at = NULL, next_failure = NULL
            WHERE id = $1 RETURNING ${columns}`,
    values: [id, key.selector, key.publicKey, key.sealedPrivateKey],
  });
  const [row] = rows;
  if (!row) throw new Error(`sending domain ${id} vanished under its lock`);
  return toRow(row);
}

/** Deletes the organization's domain `id` with its keys; answers it as it was, undefined for another id. */
export async function deleteOrganizationDomain(client: PoolClient, organizationId: number, id: number): Promise<ApiDomainRow | undefined> {
  const { rows } = await client.query<FlatRow>({
    name: 'api-domain-delete',
    text: `DELETE FROM sending_domains WHERE id = $1 AND organization_id = $2 RETURNING ${columns}`,
    values: [id, organizationId],
  });
  return rows[0] && toRow(rows[0]);
}

/** The domains whose verification was asked for, oldest request first. */
export async function requestedVerifications(pool: Pool, limit: number): Promise<ApiDomainRow[]> {
  const { rows } = await pool.query<FlatRow>({
    name: 'api-domain-verify-queue',
    text: `SELECT ${columns} FROM sending_domains WHERE verify_requested_at IS NOT NULL ORDER BY verify_requested_at LIMIT $1`,
    values: [limit],
  });
  return rows.map(toRow);
}

/**
 * Stores what the look-ups of `checked` found, for the keys that are still the domain's (a rotation or a removal in
 * between wins), and takes it off the queue unless it was asked for again meanwhile. Then a rotation's record that
 * verified makes its key the signing key, in the same transaction.
 */
export async function storeChecks(client: PoolClient, checked: ApiDomainRow, outcome: { dkim: RecordCheck; next: RecordCheck | null }): Promise<void> {
  await client.query({
    name: 'api-domain-store-checks',
    text: `UPDATE sending_domains SET
             dkim_status = CASE WHEN public_key = $2 THEN $3 ELSE dkim_status END,
             dkim_checked_at = CASE WHEN public_key = $2 THEN $4 ELSE dkim_checked_at END,
             dkim_failure = CASE WHEN public_key = $2 THEN $5 ELSE dkim_failure END,
             next_status = CASE WHEN next_public_key = $6 THEN $7 ELSE next_status END,
             next_checked_at = CASE WHEN next_public_key = $6 THEN $8 ELSE next_checked_at END,
             next_failure = CASE WHEN next_public_key = $6 THEN $9 ELSE next_failure END,
             verify_requested_at = CASE WHEN verify_requested_at = $10 THEN NULL ELSE verify_requested_at END
           WHERE id = $1`,
    values: [
      checked.id,
      checked.publicKey,
      outcome.dkim.status,
      outcome.dkim.checkedAt,
      outcome.dkim.failure,
      checked.next?.publicKey ?? null,
      outcome.next?.status ?? null,
      outcome.next?.checkedAt ?? null,
      outcome.next?.failure ?? null,
      checked.verifyRequestedAt,
    ],
  });
  if (outcome.next?.status !== 'verified' || !checked.next) return;
  await client.query({
    name: 'api-domain-promote-next',
    text: `UPDATE sending_domains SET selector = next_selector, public_key = next_public_key, sealed_private_key = next_sealed_private_key,
                  dkim_status = next_status, dkim_checked_at = next_checked_at, dkim_failure = NULL,
                  next_selector = NULL, next_public_key = NULL, next_sealed_private_key = NULL, next_status = NULL,
                  next_checked_at = NULL, next_failure = NULL
            WHERE id = $1 AND next_public_key = $2 AND next_status = 'verified'`,
    values: [checked.id, checked.next.publicKey],
  });
}
