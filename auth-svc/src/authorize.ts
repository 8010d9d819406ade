// Authorize: API key -> project -> organization -> plan. Every refusal of the key itself looks the same to the caller
// (unknown, malformed, wrong secret or revoked), so probing learns nothing about which keys exist.
import { status } from '@grpc/grpc-js';
import { UserError, type AsyncHandlers, type Counter } from '@notify/platform';
import type { auth } from '@notify/proto';
import { parseApiKey, secretMatches } from './keys/api-key.ts';
import type { KeyResolver } from './keys/key-resolver.ts';
import type { UsageTracker } from './keys/usage-recorder.ts';
import type { AuthorizeOutcome } from './metrics.ts';

export interface AuthorizeDependencies {
  readonly resolver: KeyResolver;
  readonly usage: UsageTracker;
  readonly outcomes: Counter<'outcome'>;
}

export function createAuthorizeHandlers(deps: AuthorizeDependencies): AsyncHandlers<auth.AuthServiceDefinition> {
  const refuse = (outcome: AuthorizeOutcome): never => {
    deps.outcomes.inc({ outcome });
    throw new UserError(status.UNAUTHENTICATED, 'invalid_api_key', 'the API key is invalid or has been revoked');
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
      };
    },
  };
}
