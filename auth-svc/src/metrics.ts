// auth-svc's own metrics, registered on the service's registry (gRPC call counts and latencies come from the platform).
import { Counter, Gauge, type Registry } from '@notify/platform';

export type AuthorizeOutcome = 'ok' | 'malformed' | 'unknown' | 'wrong_secret' | 'revoked' | 'wrong_organization';

export interface AuthMetrics {
  readonly cacheLookups: Counter<'result'>;
  readonly authorizations: Counter<'outcome'>;
  readonly invalidations: Counter<'scope'>;
}

export function createAuthMetrics(registry: Registry, cacheSize: () => number): AuthMetrics {
  new Gauge({
    name: 'notify_auth_cache_entries',
    help: "Key lookups (positive and negative) held in this replica's cache",
    registers: [registry],
    collect() {
      this.set(cacheSize());
    },
  });
  return {
    cacheLookups: new Counter({
      name: 'notify_auth_cache_lookups_total',
      help: 'Key lookups by prefix, by whether the cache answered (hit) or the database was asked (miss)',
      labelNames: ['result'],
      registers: [registry],
    }),
    authorizations: new Counter({
      name: 'notify_auth_authorize_total',
      help: 'Authorize calls by outcome',
      labelNames: ['outcome'],
      registers: [registry],
    }),
    invalidations: new Counter({
      name: 'notify_auth_cache_invalidations_total',
      help: 'Cache invalidations applied, for one key or for all of them (plan change, NATS reconnect)',
      labelNames: ['scope'],
      registers: [registry],
    }),
  };
}
