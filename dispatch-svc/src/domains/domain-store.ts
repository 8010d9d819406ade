// Sending domains and their DKIM keys in PostgreSQL (table sending_domains). The private key is only ever held here
// sealed; this module neither opens nor logs it.
import type { Pool, PoolClient } from '@notify/platform/database';

export interface SendingDomainRow {
  readonly id: number;
  readonly organizationId: number;
  readonly domain: string;
  readonly selector: string;
  /** Base64 SubjectPublicKeyInfo (DER): the `p=` of the TXT record. */
  readonly publicKey: string;
  readonly createdAt: Date;
}

const columns = `id, organization_id AS "organizationId", domain, selector, public_key AS "publicKey", created_at AS "createdAt"`;

export async function insertDomain(
  pool: Pool | PoolClient,
  entry: { organizationId: number; domain: string; selector: string; publicKey: string; sealedPrivateKey: string },
): Promise<SendingDomainRow> {
  const result = await pool.query<SendingDomainRow>({
    name: 'sending-domain-insert',
    text: `INSERT INTO sending_domains (organization_id, domain, selector, public_key, sealed_private_key) VALUES ($1, $2, $3, $4, $5) RETURNING ${columns}`,
    values: [entry.organizationId, entry.domain, entry.selector, entry.publicKey, entry.sealedPrivateKey],
  });
  const [row] = result.rows;
  if (!row) throw new Error('the sending domain was not inserted');
  return row;
}

/** The organization's domains, or every domain when `organizationId` is undefined, by name. */
export async function listDomains(pool: Pool, organizationId: number | undefined): Promise<SendingDomainRow[]> {
  const result = await pool.query<SendingDomainRow>({
    name: 'sending-domain-list',
    text: `SELECT ${columns} FROM sending_domains WHERE $1::bigint IS NULL OR organization_id = $1 ORDER BY domain`,
    values: [organizationId ?? null],
  });
  return result.rows;
}

/** False when the organization has no such domain. */
export async function deleteDomain(pool: Pool, organizationId: number, domain: string): Promise<boolean> {
  const result = await pool.query({
    name: 'sending-domain-delete',
    text: 'DELETE FROM sending_domains WHERE organization_id = $1 AND domain = $2',
    values: [organizationId, domain],
  });
  return (result.rowCount ?? 0) > 0;
}

/** The sealed key the mailers sign the domain's mail with; undefined when the domain has none. */
export async function findSigningKey(pool: Pool, domain: string): Promise<{ selector: string; sealedPrivateKey: string } | undefined> {
  const result = await pool.query<{ selector: string; sealedPrivateKey: string }>({
    name: 'sending-domain-signing-key',
    text: 'SELECT selector, sealed_private_key AS "sealedPrivateKey" FROM sending_domains WHERE domain = $1',
    values: [domain],
  });
  return result.rows[0];
}
