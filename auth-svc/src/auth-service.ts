// auth-svc's handlers and the machinery behind them (key cache, invalidation channel, last-use recording),
// built from its dependencies without listening anywhere: main.ts serves them, tests run several "replicas" in one process.
import { type AsyncHandlers, ExpiringCache, type Logger, type Registry } from '@notify/platform';
import type { Pool } from '@notify/platform/database';
import type { NatsConnection } from '@notify/platform/nats';
import type { auth } from '@notify/proto';
import { createAdminHandlers } from './admin/handlers.ts';
import { createAuthorizeHandlers } from './authorize.ts';
import { openInvalidationChannel } from './keys/invalidation.ts';
import type { KeyRecord } from './keys/key-lookup.ts';
import { KeyResolver } from './keys/key-resolver.ts';
import { createProjectKeyHandlers } from './keys/project-keys.ts';
import { startUsageFlusher, UsageTracker } from './keys/usage-recorder.ts';
import { createAuthMetrics } from './metrics.ts';
import { createPanelAccessHandlers } from './panel-users/panel-access.ts';

export interface AuthServiceOptions {
  readonly pool: Pool;
  readonly nats: NatsConnection;
  /** `topology(prefix).keyInvalidationSubject`. */
  readonly invalidationSubject: string;
  readonly cacheTtlMs: number;
  readonly logger: Logger;
  readonly registry: Registry;
  /** How often noted key uses are written to last_used_at (default 5 s). */
  readonly usageFlushIntervalMs?: number;
}

export interface AuthService {
  readonly authorize: AsyncHandlers<auth.AuthServiceDefinition>;
  readonly admin: AsyncHandlers<auth.AuthAdminServiceDefinition>;
  /** The web panel's sign-in and access checks (gateway token, like `authorize`). */
  readonly panel: AsyncHandlers<auth.PanelAuthServiceDefinition>;
  /** Stops listening for invalidations and writes the key uses still pending; the pool and NATS stay open. */
  close(): Promise<void>;
}

// Enough for every live key of a large deployment plus a burst of guessed prefixes, at a few hundred bytes each.
const cacheMaxEntries = 100_000;
// last_used_at is a hint for operators ("is this key still in use?"): minute precision is plenty.
const usageIntervalMs = 60_000;

export async function createAuthService(options: AuthServiceOptions): Promise<AuthService> {
  const { pool, nats, logger, registry } = options;
  const cache = new ExpiringCache<KeyRecord | null>({ ttlMs: options.cacheTtlMs, maxEntries: cacheMaxEntries });
  const metrics = createAuthMetrics(registry, () => cache.size);
  const resolver = new KeyResolver({ pool, cache, lookups: metrics.cacheLookups });
  const invalidation = await openInvalidationChannel({
    nats,
    subject: options.invalidationSubject,
    resolver,
    logger,
    received: metrics.invalidations,
  });
  const usage = new UsageTracker({ minIntervalMs: usageIntervalMs });
  const flusher = startUsageFlusher({ tracker: usage, pool, flushIntervalMs: options.usageFlushIntervalMs ?? 5_000, logger });

  return {
    authorize: {
      ...createAuthorizeHandlers({ pool, resolver, usage, outcomes: metrics.authorizations }),
      ...createProjectKeyHandlers({ pool, invalidation }),
    },
    panel: createPanelAccessHandlers({ pool, logger, invalidation }),
    admin: createAdminHandlers({ pool, invalidation }),
    async close() {
      await invalidation.close();
      await flusher.stop();
    },
  };
}
