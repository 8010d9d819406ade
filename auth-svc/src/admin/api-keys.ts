// API keys: issued with a fresh random secret shown once, stored as prefix + SHA-256 of the secret, revoked everywhere
// within a second. Creation, revocation and a change of rate are all announced with the key's prefix
// (keys/invalidation.ts): every replica of auth-svc and of the gateway drops what it cached about the key.
import { status } from '@grpc/grpc-js';
import { type AsyncHandlers, UserError } from '@notify/platform';
import { type AuditEntry, type Pool, type PoolClient, recordAudit, withTransaction } from '@notify/platform/database';
import type { auth, Scope } from '@notify/proto';
import { generateApiKey } from '../keys/api-key.ts';
import type { InvalidationChannel } from '../keys/invalidation.ts';
import { translateConstraints } from './constraint-errors.ts';
import type { AdminDependencies } from './dependencies.ts';
import { type ApiKeyRow, apiKeyColumns, notFound, toApiKey } from './records.ts';
import { Checks } from './validation.ts';

type ApiKeyHandlers = Pick<AsyncHandlers<auth.AuthAdminServiceDefinition>, 'CreateApiKey' | 'RevokeApiKey' | 'ListApiKeys' | 'UpdateApiKey'>;

/**
 * Sets key `keyId`'s send rate (null: the gateway's default) and announces its prefix, so that every gateway replica
 * asks auth-svc again at its next request and applies the new rate. `within`, when given, confines the change to that
 * project of that organization (the panel). Undefined when there is no such key (within that project): nothing changed.
 */
export async function setKeyRate(
  deps: { pool: Pool; invalidation: InvalidationChannel },
  keyId: number,
  sendRate: string | null,
  within?: { organizationId: number; projectId: number },
): Promise<auth.ApiKey__Output | undefined> {
  const { rows } = await deps.pool.query<ApiKeyRow>(
    `UPDATE api_keys SET send_rate = $2
      WHERE id = $1 AND ($3::bigint IS NULL OR project_id = $3 AND project_id IN (SELECT id FROM projects WHERE organization_id = $4))
      RETURNING ${apiKeyColumns}`,
    [keyId, sendRate, within?.projectId ?? null, within?.organizationId ?? null],
  );
  const row = rows[0];
  if (!row) return undefined;
  await deps.invalidation.invalidateKey(row.prefix);
  return toApiKey(row);
}

/** Who changes a key over the management API: the change is recorded in the audit log, in its transaction. */
export type KeyChangeActor = Pick<AuditEntry, 'organizationId' | 'apiKeyId'>;

/** Runs `write` alone, or with the audit entry it makes (when an actor is given) in one transaction. */
async function audited(
  pool: Pool,
  actor: KeyChangeActor | undefined,
  write: (db: Pool | PoolClient) => Promise<ApiKeyRow | undefined>,
  entry: (row: ApiKeyRow) => Omit<AuditEntry, 'organizationId' | 'apiKeyId'>,
) {
  if (!actor) return write(pool);
  return withTransaction(pool, async (client) => {
    const row = await write(client);
    if (row) await recordAudit(client, { ...actor, ...entry(row) });
    return row;
  });
}

/**
 * Refuses, with INVALID_ARGUMENT from_domain_unknown (the domains as its fields), the domains of `fromDomains` that are
 * not sending domains of the organization of project `projectId`, whatever their verification. A missing project is
 * left for the insert to report.
 */
async function ensureSendingDomains(pool: Pool, projectId: number, fromDomains: readonly string[]): Promise<void> {
  if (fromDomains.length === 0) return;
  const { rows } = await pool.query<{ unknown: string[] }>(
    `SELECT ARRAY(SELECT d FROM unnest($2::text[]) AS d
                   WHERE NOT EXISTS (SELECT 1 FROM sending_domains s WHERE s.organization_id = p.organization_id AND s.domain = d)
                   ORDER BY d COLLATE "C") AS unknown
       FROM projects p WHERE p.id = $1`,
    [projectId, fromDomains],
  );
  const unknown = rows[0]?.unknown ?? [];
  if (unknown.length > 0)
    throw new UserError(status.INVALID_ARGUMENT, 'from_domain_unknown', `from_domains: not a sending domain of the organization: ${unknown.join(', ')}`, {
      fields: unknown,
    });
}

/**
 * A new key of `projectId`, announced; the answer is the only one that ever carries its secret. `fromDomains`, as
 * Checks.fromDomains gives them, must all be sending domains of the project's organization.
 */
export async function issueApiKey(
  deps: { pool: Pool; invalidation: InvalidationChannel },
  key: { projectId: number; name: string; sendRate: string | null; scopes: readonly Scope[]; test: boolean; fromDomains: readonly string[] },
  actor?: KeyChangeActor,
): Promise<auth.CreatedApiKey__Output> {
  await ensureSendingDomains(deps.pool, key.projectId, key.fromDomains);
  const generated = generateApiKey({ test: key.test });
  const row = await translateConstraints(
    async () =>
      (await audited(
        deps.pool,
        actor,
        async (db) =>
          (
            await db.query<ApiKeyRow>(
              `INSERT INTO api_keys (project_id, name, prefix, secret_hash, send_rate, scopes, from_domains)
               VALUES ($1, $2, $3, $4, $5, $6, $7) RETURNING ${apiKeyColumns}`,
              [key.projectId, key.name, generated.prefix, generated.secretHash, key.sendRate, key.scopes, key.fromDomains],
            )
          ).rows[0],
        (created) => ({
          projectId: key.projectId,
          action: 'api_key.create',
          target: String(created.id),
          detail: { name: key.name, scopes: key.scopes, test: key.test, from_domains: key.fromDomains },
        }),
      )) as ApiKeyRow,
    // 64 random bits make a prefix collision practically impossible; if it happens, asking again succeeds.
    { duplicate: 'the generated key collided with an existing one; try again', missing: `project ${key.projectId} does not exist` },
  );
  // Every replica forgets any earlier "no such key" for the prefix, and the gateways learn that it names a key.
  await deps.invalidation.invalidateKey(row.prefix);
  return { key: toApiKey(row), apiKey: generated.apiKey };
}

/**
 * Revokes key `keyId` (of project `projectId` only, when given) and announces it; undefined when there is no such key.
 * Revoking twice is harmless and answers the same record: the first revocation's time is kept.
 */
export async function revokeApiKey(
  deps: { pool: Pool; invalidation: InvalidationChannel },
  keyId: number,
  projectId?: number,
  actor?: KeyChangeActor,
): Promise<auth.ApiKey__Output | undefined> {
  const row = await audited(
    deps.pool,
    actor,
    async (db) =>
      (
        await db.query<ApiKeyRow>(
          `UPDATE api_keys SET revoked_at = COALESCE(revoked_at, now()) WHERE id = $1 AND ($2::bigint IS NULL OR project_id = $2) RETURNING ${apiKeyColumns}`,
          [keyId, projectId ?? null],
        )
      ).rows[0],
    (revoked) => ({ projectId: revoked.project_id, action: 'api_key.revoke', target: String(revoked.id) }),
  );
  if (!row) return undefined;
  await deps.invalidation.invalidateKey(row.prefix);
  return toApiKey(row);
}

export function createApiKeyHandlers({ pool, invalidation }: AdminDependencies): ApiKeyHandlers {
  return {
    async CreateApiKey(request) {
      const checks = new Checks();
      const projectId = checks.id('project_id', request.projectId);
      const name = checks.name('name', request.name, 200);
      const sendRate = checks.sendRate('send_rate', request.sendRate);
      const scopes = checks.scopes('scopes', request.scopes);
      const fromDomains = checks.fromDomains('from_domains', request.fromDomains);
      checks.done();
      return issueApiKey({ pool, invalidation }, { projectId, name, sendRate, scopes, test: request.test, fromDomains });
    },

    async RevokeApiKey(request) {
      const checks = new Checks();
      const id = checks.id('id', request.id);
      checks.done();
      const key = await revokeApiKey({ pool, invalidation }, id);
      if (!key) throw notFound('API key', id);
      return key;
    },

    async UpdateApiKey(request) {
      const checks = new Checks();
      const id = checks.id('id', request.id);
      const sendRate = request.sendRate === undefined ? undefined : checks.sendRate('send_rate', request.sendRate);
      checks.done();
      let key: auth.ApiKey__Output | undefined;
      if (sendRate === undefined) {
        const { rows } = await pool.query<ApiKeyRow>(`SELECT ${apiKeyColumns} FROM api_keys WHERE id = $1`, [id]);
        key = rows[0] && toApiKey(rows[0]);
      } else {
        key = await setKeyRate({ pool, invalidation }, id, sendRate);
      }
      if (!key) throw notFound('API key', id);
      return key;
    },

    async ListApiKeys(request) {
      const checks = new Checks();
      const projectId = checks.id('project_id', request.projectId);
      checks.done();
      const project = await pool.query('SELECT 1 FROM projects WHERE id = $1', [projectId]);
      if (project.rowCount === 0) throw notFound('project', projectId);
      const { rows } = await pool.query<ApiKeyRow>(`SELECT ${apiKeyColumns} FROM api_keys WHERE project_id = $1 ORDER BY id`, [projectId]);
      return { keys: rows.map(toApiKey) };
    },
  };
}
