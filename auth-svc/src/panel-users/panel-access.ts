// PanelAuthService (gateway token, called by the gateway): verify a sign-in, say what a signed-in user
// may see, list a project's keys, make one with its scopes and set one's send rate. A refused sign-in never tells
// whether the email exists.
import { status } from '@grpc/grpc-js';
import { type AsyncHandlers, type Logger, UserError } from '@notify/platform';
import type { Pool } from '@notify/platform/database';
import type { auth } from '@notify/proto';
import { issueApiKey, setKeyRate } from '../admin/api-keys.ts';
import { type ApiKeyRow, apiKeyColumns, toApiKey, toOrganization, toProject } from '../admin/records.ts';
import { Checks } from '../admin/validation.ts';
import type { InvalidationChannel } from '../keys/invalidation.ts';
import { normalizeEmail } from './identity.ts';
import { findAccess, findCredentials, projectBelongs, replacePassword, storedHash, toPanelUser } from './panel-user-store.ts';
import { hashPassword, needsRehash, type PasswordHash, passwordLength, passwordMatches } from './password.ts';

const invalidCredentials = (): UserError => new UserError(status.UNAUTHENTICATED, 'invalid_credentials', 'the email or the password is wrong');

export function createPanelAccessHandlers({
  pool,
  logger,
  invalidation,
}: {
  pool: Pool;
  logger: Logger;
  invalidation: InvalidationChannel;
}): AsyncHandlers<auth.PanelAuthServiceDefinition> {
  // Hashed against when the email is unknown or disabled, so that such a refusal takes as long as a wrong password.
  // Made at once, so the first such refusal does not also pay for making it.
  const decoy: Promise<PasswordHash> = hashPassword('decoy password that no user has');
  const projectNotFound = (): UserError => new UserError(status.NOT_FOUND, 'project_not_found', 'no such project in this organization');

  return {
    async VerifyPanelCredentials(request) {
      // Longer than any password that can be set: refused without spending a hash on it.
      if (request.password.length === 0 || [...request.password].length > passwordLength.max) throw invalidCredentials();
      const row = await findCredentials(pool, normalizeEmail(request.email));
      if (!row || row.disabled_at !== null) {
        await passwordMatches(request.password, await decoy);
        throw invalidCredentials();
      }
      const stored = storedHash(row);
      if (!(await passwordMatches(request.password, stored))) throw invalidCredentials();
      if (needsRehash(stored)) {
        // The password is known right now, and only now: the moment to move its hash to the current parameters.
        await replacePassword(pool, row.id, await hashPassword(request.password), false).catch((error: unknown) =>
          logger.warn({ err: error, panelUserId: row.id }, 'could not upgrade a panel password hash; it stays valid as it is'),
        );
      }
      return toPanelUser(row);
    },

    async GetPanelAccess(request) {
      const access = await findAccess(pool, request.userId);
      if (!access) throw new UserError(status.NOT_FOUND, 'panel_user_not_found', 'no enabled panel user with this id');
      return { user: toPanelUser(access.user), organization: toOrganization(access.organization), projects: access.projects.map(toProject) };
    },

    async ListPanelApiKeys(request) {
      if (!(await projectBelongs(pool, request.organizationId, request.projectId))) throw projectNotFound();
      const { rows } = await pool.query<ApiKeyRow>({
        name: 'panel-api-keys',
        text: `SELECT ${apiKeyColumns} FROM api_keys WHERE project_id = $1 ORDER BY id`,
        values: [request.projectId],
      });
      return { keys: rows.map(toApiKey) };
    },

    async CreatePanelApiKey(request) {
      const checks = new Checks();
      const name = checks.name('name', request.name, 200);
      const scopes = checks.scopes('scopes', request.scopes);
      checks.done();
      if (!(await projectBelongs(pool, request.organizationId, request.projectId))) throw projectNotFound();
      return issueApiKey({ pool, invalidation }, { projectId: request.projectId, name, sendRate: null, scopes, test: request.test, fromDomains: [] });
    },

    async SetPanelApiKeyRate(request) {
      const checks = new Checks();
      const sendRate = checks.sendRate('send_rate', request.sendRate);
      checks.done();
      // The project is the page the operator is on: a key of another project, even of the same organization, is not found.
      const key = await setKeyRate({ pool, invalidation }, request.keyId, sendRate, { organizationId: request.organizationId, projectId: request.projectId });
      if (!key) throw new UserError(status.NOT_FOUND, 'api_key_not_found', 'no such API key in this project');
      return key;
    },
  };
}
