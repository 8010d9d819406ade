// API keys: issued with a fresh random secret shown once, stored as prefix + SHA-256 of the secret, revoked everywhere
// within a second. Creation and revocation are both announced with the key's prefix (keys/invalidation.ts).
import type { AsyncHandlers } from '@notify/platform';
import type { auth } from '@notify/proto';
import { generateApiKey } from '../keys/api-key.ts';
import { translateConstraints } from './constraint-errors.ts';
import type { AdminDependencies } from './dependencies.ts';
import { apiKeyColumns, notFound, toApiKey, type ApiKeyRow } from './records.ts';
import { Checks } from './validation.ts';

type ApiKeyHandlers = Pick<AsyncHandlers<auth.AuthAdminServiceDefinition>, 'CreateApiKey' | 'RevokeApiKey' | 'ListApiKeys'>;

export function createApiKeyHandlers({ pool, invalidation }: AdminDependencies): ApiKeyHandlers {
  return {
    async CreateApiKey(request) {
      const checks = new Checks();
      const projectId = checks.id('project_id', request.projectId);
      const name = checks.name('name', request.name, 200);
      checks.done();
      const key = generateApiKey();
      const row = await translateConstraints(
        async () => {
          const { rows } = await pool.query<ApiKeyRow>(
            `INSERT INTO api_keys (project_id, name, prefix, secret_hash) VALUES ($1, $2, $3, $4) RETURNING ${apiKeyColumns}`,
            [projectId, name, key.prefix, key.secretHash],
          );
          return rows[0] as ApiKeyRow;
        },
        // 64 random bits make a prefix collision practically impossible; if it happens, asking again succeeds.
        { duplicate: 'the generated key collided with an existing one; try again', missing: `project ${projectId} does not exist` },
      );
      // Every replica forgets any earlier "no such key" for the prefix, and the gateways learn that it names a key.
      await invalidation.invalidateKey(row.prefix);
      return { key: toApiKey(row), apiKey: key.apiKey };
    },

    async RevokeApiKey(request) {
      const checks = new Checks();
      const id = checks.id('id', request.id);
      checks.done();
      // COALESCE keeps the first revocation time: revoking twice is harmless and returns the same record.
      const { rows } = await pool.query<ApiKeyRow>(
        `UPDATE api_keys SET revoked_at = COALESCE(revoked_at, now()) WHERE id = $1 RETURNING ${apiKeyColumns}`,
        [id],
      );
      const row = rows[0];
      if (!row) throw notFound('API key', id);
      await invalidation.invalidateKey(row.prefix);
      return toApiKey(row);
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
