// Prometheus registry per service and the operations listener: /metrics, /healthz (alive) and /readyz (dependencies reachable).
import { createServer, type Server } from 'node:http';
import { collectDefaultMetrics, Registry } from 'prom-client';
import { listenOn } from './listen.ts';
import type { Logger } from './logger.ts';

export { Counter, Gauge, Histogram, Registry } from 'prom-client';

export function createRegistry(service: string): Registry {
  const registry = new Registry();
  registry.setDefaultLabels({ service });
  collectDefaultMetrics({ register: registry, prefix: 'notify_' });
  // prom-client exports these gauges with a `_total` suffix, which Prometheus reserves for counters; the per-type
  // gauges (notify_nodejs_active_handles etc.) carry the same information under conventional names.
  for (const kind of ['handles', 'requests', 'resources']) registry.removeSingleMetric(`notify_nodejs_active_${kind}_total`);
  return registry;
}

/**
 * A readiness check: resolves true when the dependency answers, rejects (or resolves false) when it does not. It may
 * resolve 'degraded' instead: the dependency is down but the service keeps serving without it (see `degradable`).
 */
export type ReadinessCheck = () => Promise<boolean | 'degraded'>;

export type ReadinessState = 'ok' | 'degraded' | 'failing';

/** The answer of /readyz: 200 while `ready`, 503 otherwise. */
export interface Readiness {
  readonly ready: boolean;
  /** `degraded`: ready, but some dependency the service can do without is down. */
  readonly status: 'ok' | 'degraded' | 'unavailable';
  readonly checks: Record<string, ReadinessState>;
}

export interface OpsServer {
  readonly port: number;
  close(): Promise<void>;
}

/**
 * For a dependency the service can serve without (a cache, a shared counter with a local fallback): when `check`
 * fails it is reported as degraded and leaves the service ready, so a probe does not take every replica out of
 * rotation for an outage they are built to ride out.
 */
export function degradable(check: ReadinessCheck): ReadinessCheck {
  return () =>
    check().then(
      (result) => (result === true ? true : 'degraded'),
      () => 'degraded' as const,
    );
}

/**
 * Runs every check at once. A check that rejects counts as failing; its error is not reported, as it may name
 * addresses. Served on the ops port by runService, and by any public listener that wants the same answer.
 */
export async function checkReadiness(checks: Readonly<Record<string, ReadinessCheck>>): Promise<Readiness> {
  const results: Record<string, ReadinessState> = {};
  await Promise.all(
    Object.entries(checks).map(async ([name, check]) => {
      try {
        const result = await check();
        results[name] = result === true ? 'ok' : result === 'degraded' ? 'degraded' : 'failing';
      } catch {
        results[name] = 'failing';
      }
    }),
  );
  const states = Object.values(results);
  const ready = !states.includes('failing');
  return { ready, status: !ready ? 'unavailable' : states.includes('degraded') ? 'degraded' : 'ok', checks: results };
}

export async function startOpsServer(options: {
  port: number;
  host?: string;
  registry: Registry;
  checks: Record<string, ReadinessCheck>;
  logger: Logger;
}): Promise<OpsServer> {
  const server: Server = createServer((req, res) => {
    const path = (req.url ?? '/').split('?')[0];
    const reply = (code: number, type: string, body: string): void => {
      res.writeHead(code, { 'content-type': type, 'cache-control': 'no-store' });
      res.end(body);
    };
    if (req.method !== 'GET') return reply(405, 'text/plain', 'method not allowed\n');
    if (path === '/healthz') return reply(200, 'application/json', '{"status":"ok"}');
    if (path === '/readyz') {
      void checkReadiness(options.checks).then((result) =>
        reply(result.ready ? 200 : 503, 'application/json', JSON.stringify({ status: result.status, checks: result.checks })),
      );
      return;
    }
    if (path === '/metrics') {
      options.registry.metrics().then(
        (text) => reply(200, options.registry.contentType, text),
        (error: unknown) => {
          options.logger.error({ err: error }, 'metrics collection failed');
          reply(500, 'text/plain', 'metrics collection failed\n');
        },
      );
      return;
    }
    reply(404, 'text/plain', 'not found\n');
  });
  const port = await listenOn(server, options.port, options.host ?? '0.0.0.0');
  options.logger.info({ port }, 'operations listener ready (/metrics, /healthz, /readyz)');
  return {
    port,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}
