// Authorize: API key -> project -> organization -> plan. A refusal of the key names its reason to the gateway (unknown,
// wrong secret, revoked), which counts guesses and misconfigured clients apart; the public 401 is the same for all.
// ListKeyPrefixes: the prefixes of every key, for the gateway's brute-force guard.
import { status } from '@grpc/grpc-js';
import { type AsyncHandlers, type Counter, UserError } from '@notify/platform';
import type { Pool } from '@notify/platform/database';
import type { auth } from '@notify/proto';
import { parseApiKey, secretMatches } from './keys/api-key.ts';
import { listKeyPrefixes } from './keys/key-lookup.ts';
import type { KeyResolver } from './keys/key-resolver.ts';
import type { UsageTracker } from './keys/usage-recorder.ts';
import type { AuthorizeOutcome } from './metrics.ts';

export interface AuthorizeDependencies {
  readonly pool: Pool;
  readonly resolver: KeyResolver;
  readonly usage: UsageTracker;
  readonly outcomes: Counter<'outcome'>;
}

/** The error code of each refusal of a key (proto/auth/v1/auth.proto). */
export const refusalReasons = {
  malformed: 'api_key_unknown',
  unknown: 'api_key_unknown',
  wrong_secret: 'api_key_wrong_secret',
  revoked: 'api_key_revoked',
} as const;

const maxPrefixesPerPage = 10_000;

export function createAuthorizeHandlers(deps: AuthorizeDependencies): Pick<AsyncHandlers<auth.AuthServiceDefinition>, 'Authorize' | 'ListKeyPrefixes'> {
  const refuse = (outcome: Exclude<AuthorizeOutcome, 'ok' | 'wrong_organization'>): never => {
    deps.outcomes.inc({ outcome });
    throw new UserError(status.UNAUTHENTICATED, refusalReasons[outcome], 'the API key is invalid or has been revoked');
  };

  return {
    async Authorize(request) {
      const parsed = parseApiKey(request.apiKey);
      if (!parsed) return refuse('malformed');
      const key = await deps.resolver.resolve(parsed.prefix);
      if (!key) return refuse('unknown');
      if (!secretMatches(parsed.secret, key.secretHash)) return refuse('wrong_secret');
      if (key.revoked) return refuse('revoked');
      // Organization 0 is what the gateway sends for an unusable X-Organization-ID header; no organization has id 0.
      if (request.organizationId <= 0 || key.organizationId !== request.organizationId) {
        deps.outcomes.inc({ outcome: 'wrong_organization' });
        throw new UserError(status.PERMISSION_DENIED, 'permission_denied', 'the API key may not act on this organization');
      }
      deps.usage.touch(key.keyId);
      deps.outcomes.inc({ outcome: 'ok' });
      return {
        keyId: key.keyId,
        projectId: key.projectId,
        organizationId: key.organizationId,
        plan: { ...key.plan },
        sendRate: key.sendRate,
        test: key.test,
        scopes: [...key.scopes],
        fromDomains: [...key.fromDomains],
      };
    },

    async ListKeyPrefixes(request) {
      const limit = request.limit > 0 ? Math.min(request.limit, maxPrefixesPerPage) : maxPrefixesPerPage;
      return { prefixes: await listKeyPrefixes(deps.pool, request.after, limit) };
    },
  };
}
