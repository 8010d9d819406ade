// The authorization cache's metrics, registered on the gateway's registry: how often a send was answered from memory,
// and how often auth-svc's announcements (or a lost NATS connection) emptied it.
import { Counter, type Registry } from '@notify/platform';

export interface AuthorizationCacheMetrics {
  /** notify_gateway_auth_cache_total{result="hit"|"miss"}. */
  readonly lookups: Counter<'result'>;
  /** notify_gateway_auth_cache_invalidations_total{scope="key"|"all"}. */
  readonly invalidations: Counter<'scope'>;
}

export function createAuthorizationCacheMetrics(registry: Registry): AuthorizationCacheMetrics {
  const lookups = new Counter({
    name: 'notify_gateway_auth_cache_total',
    help: "Authorizations of a send by whether an accepted key was answered from the gateway's cache (hit) or auth-svc was asked (miss)",
    labelNames: ['result'],
    registers: [registry],
  });
  const invalidations = new Counter({
    name: 'notify_gateway_auth_cache_invalidations_total',
    help: "Invalidations applied to the gateway's authorization cache: one key (revoked) or all of it (plan change, NATS connection lost)",
    labelNames: ['scope'],
    registers: [registry],
  });
  // Present from the start, so that rates and ratios have a series before the first send.
  for (const result of ['hit', 'miss']) lookups.inc({ result }, 0);
  for (const scope of ['key', 'all']) invalidations.inc({ scope }, 0);
  return { lookups, invalidations };
}
