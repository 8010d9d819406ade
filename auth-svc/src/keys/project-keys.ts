// The public API's key management (`keys:manage`, GET/POST /api/v1/api-keys/, DELETE /api/v1/api-keys/{id}/): the
// gateway passes the caller's key id, which it has just authorized, and the caller is read again here, so a key
// revoked or changed since cannot act on what the gateway cached. A caller may issue and revoke only keys of its own
// project whose scopes are all among its own: no key hands out, or takes away, more than it has. A test key issues
// only test keys. A key limited to some sending domains (`from_domains`) issues only keys limited to some of its own
// (its own list when the request names none), and revokes only keys so limited. Each issue and revocation is recorded
// in the audit log with the caller's key, in its transaction.
import { status } from '@grpc/grpc-js';
import { type AsyncHandlers, UserError } from '@notify/platform';
import type { Pool } from '@notify/platform/database';
import { type auth, missingScope } from '@notify/proto';
import { issueApiKey, type KeyChangeActor, revokeApiKey } from '../admin/api-keys.ts';
import { type ApiKeyRow, apiKeyColumns, toApiKey } from '../admin/records.ts';
import { Checks } from '../admin/validation.ts';
import { isTestPrefix } from './api-key.ts';
import type { InvalidationChannel } from './invalidation.ts';

type ProjectKeyHandlers = Pick<AsyncHandlers<auth.AuthServiceDefinition>, 'ListProjectApiKeys' | 'CreateProjectApiKey' | 'RevokeProjectApiKey'>;

/** The key acting, as the database has it now. */
interface Caller {
  readonly id: number;
  readonly organizationId: number;
  readonly projectId: number;
  readonly scopes: readonly string[];
  readonly test: boolean;
  /** Empty: no limit. */
  readonly fromDomains: readonly string[];
}

function insufficientScope(scope: string): UserError {
  return new UserError(status.PERMISSION_DENIED, 'insufficient_scope', `the API key lacks the scope ${scope}`);
}

/**
 * Refused: the caller is limited to some sending domains and the key it would issue or revoke may send From `domain`,
 * outside them (undefined: from any domain). The domain is the refusal's field, for the gateway to name.
 */
function fromDomainNotAllowed(domain: string | undefined): UserError {
  const what = domain === undefined ? 'a key without a sending-domain limit' : `a key that sends From ${domain}`;
  return new UserError(status.PERMISSION_DENIED, 'from_domain_not_allowed', `the API key is limited to some sending domains and may not manage ${what}`, {
    fields: domain === undefined ? [] : [domain],
  });
}

/** Why a caller limited to `held` (non-empty) may not manage a key limited to `wanted`; undefined when it may. */
function outsideLimit(held: readonly string[], wanted: readonly string[]): UserError | undefined {
  if (wanted.length === 0) return fromDomainNotAllowed(undefined);
  const outside = wanted.find((domain) => !held.includes(domain));
  return outside === undefined ? undefined : fromDomainNotAllowed(outside);
}

const keyNotFound = (): UserError => new UserError(status.NOT_FOUND, 'api_key_not_found', 'no such API key in this project');

const actorOf = (caller: Caller): KeyChangeActor => ({ organizationId: caller.organizationId, apiKeyId: caller.id });

export function createProjectKeyHandlers(deps: { pool: Pool; invalidation: InvalidationChannel }): ProjectKeyHandlers {
  const { pool } = deps;

  /** The caller, refused unless it is a live key with keys:manage. */
  async function callerOf(keyId: number): Promise<Caller> {
    const { rows } = await pool.query<{ project_id: number; organization_id: number; scopes: string[]; prefix: string; from_domains: string[] }>(
      `SELECT k.project_id, p.organization_id, k.scopes, k.prefix, k.from_domains
         FROM api_keys k JOIN projects p ON p.id = k.project_id WHERE k.id = $1 AND k.revoked_at IS NULL`,
      [keyId],
    );
    const row = rows[0];
    // The gateway authorized it a moment ago: gone or revoked since, it is refused as a key without the scope.
    if (!row?.scopes.includes('keys:manage')) throw insufficientScope('keys:manage');
    return {
      id: keyId,
      organizationId: row.organization_id,
      projectId: row.project_id,
      scopes: row.scopes,
      test: isTestPrefix(row.prefix),
      fromDomains: row.from_domains,
    };
  }

  return {
    async ListProjectApiKeys(request) {
      const caller = await callerOf(request.callerKeyId);
      const { rows } = await pool.query<ApiKeyRow>(`SELECT ${apiKeyColumns} FROM api_keys WHERE project_id = $1 ORDER BY id`, [caller.projectId]);
      return { keys: rows.map(toApiKey) };
    },

    async CreateProjectApiKey(request) {
      const caller = await callerOf(request.callerKeyId);
      const checks = new Checks();
      const name = checks.name('name', request.name, 200);
      const scopes = checks.scopes('scopes', request.scopes);
      const named = checks.fromDomains('from_domains', request.fromDomains);
      checks.done();
      const missing = missingScope(caller.scopes, scopes);
      if (missing) throw insufficientScope(missing);
      const limited = caller.fromDomains.length > 0;
      const fromDomains = limited && named.length === 0 ? caller.fromDomains : named;
      const refused = limited ? outsideLimit(caller.fromDomains, fromDomains) : undefined;
      if (refused) throw refused;
      return issueApiKey(deps, { projectId: caller.projectId, name, sendRate: null, scopes, test: caller.test || request.test, fromDomains }, actorOf(caller));
    },

    async RevokeProjectApiKey(request) {
      const caller = await callerOf(request.callerKeyId);
      const { rows } = await pool.query<{ scopes: string[]; from_domains: string[] }>(
        'SELECT scopes, from_domains FROM api_keys WHERE id = $1 AND project_id = $2',
        [request.id, caller.projectId],
      );
      const target = rows[0];
      if (!target) throw keyNotFound();
      const missing = missingScope(caller.scopes, target.scopes);
      if (missing) throw insufficientScope(missing);
      const refused = caller.fromDomains.length > 0 ? outsideLimit(caller.fromDomains, target.from_domains) : undefined;
      if (refused) throw refused;
      const revoked = await revokeApiKey(deps, request.id, caller.projectId, actorOf(caller));
      if (!revoked) throw keyNotFound();
      return revoked;
    },
  };
}
