// The one query on Authorize's path: a key by its prefix, with what the gateway needs to decide (project, organization,
// plan); and the prefixes of every key, a page at a time, walked along the prefix's unique index.
import type { Pool } from '@notify/platform/database';
import { isTestPrefix } from './api-key.ts';

export interface PlanState {
  readonly planId: number;
  readonly name: string;
  readonly suspended: boolean;
  /** 0 means unlimited. */
  readonly monthlyQuota: number;
}

export interface KeyRecord {
  readonly keyId: number;
  readonly projectId: number;
  readonly organizationId: number;
  readonly secretHash: Buffer;
  readonly revoked: boolean;
  /** Per-key send rate, '' for the gateway's default. */
  readonly sendRate: string;
  /** A test key (`nk_test_`): its messages are never mailed nor counted against the quota. */
  readonly test: boolean;
  /** What the key may do (proto/src/scopes.ts). */
  readonly scopes: readonly string[];
  /** The domains the key may send From; empty: no limit. */
  readonly fromDomains: readonly string[];
  readonly plan: PlanState;
}

interface Row {
  id: number;
  project_id: number;
  organization_id: number;
  secret_hash: Buffer;
  revoked: boolean;
  send_rate: string | null;
  scopes: string[];
  from_domains: string[];
  plan_id: number;
  plan_name: string;
  suspended: boolean;
  monthly_quota: number;
}

const byPrefix = `
  SELECT k.id, k.project_id, p.organization_id, k.secret_hash, k.revoked_at IS NOT NULL AS revoked, k.send_rate, k.scopes, k.from_domains,
         pl.id AS plan_id, pl.name AS plan_name, pl.suspended, pl.monthly_quota
    FROM api_keys k
    JOIN projects p ON p.id = k.project_id
    JOIN organizations o ON o.id = p.organization_id
    JOIN plans pl ON pl.id = o.plan_id
   WHERE k.prefix = $1`;

export async function findKeyByPrefix(pool: Pool, prefix: string): Promise<KeyRecord | undefined> {
  const { rows } = await pool.query<Row>({ name: 'auth-key-by-prefix', text: byPrefix, values: [prefix] });
  const row = rows[0];
  if (!row) return undefined;
  return {
    keyId: row.id,
    projectId: row.project_id,
    organizationId: row.organization_id,
    secretHash: row.secret_hash,
    revoked: row.revoked,
    sendRate: row.send_rate ?? '',
    test: isTestPrefix(prefix),
    scopes: row.scopes,
    fromDomains: row.from_domains,
    plan: { planId: row.plan_id, name: row.plan_name, suspended: row.suspended, monthlyQuota: row.monthly_quota },
  };
}

export async function listKeyPrefixes(pool: Pool, after: string, limit: number): Promise<string[]> {
  const { rows } = await pool.query<{ prefix: string }>({
    name: 'auth-key-prefixes',
    text: 'SELECT prefix FROM api_keys WHERE prefix > $1 ORDER BY prefix LIMIT $2',
    values: [after, limit],
  });
  return rows.map((row) => row.prefix);
}
