// Prometheus registry per service and the operations listener: /metrics, /healthz (alive) and /readyz (dependencies reachable).
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { collectDefaultMetrics, Registry } from 'prom-client';
import type { Logger } from './logger.ts';

export { Counter, Gauge, Histogram, Registry } from 'prom-client';

export function createRegistry(service: string): Registry {
  const registry = new Registry();
  registry.setDefaultLabels({ service });
  collectDefaultMetrics({ register: registry, prefix: 'notify_' });
  return registry;
}

/** A readiness check: resolves when the dependency answers, rejects (or resolves false) when it does not. */
export type ReadinessCheck = () => Promise<boolean>;

export interface OpsServer {
  readonly port: number;
  close(): Promise<void>;
}

async function readiness(checks: Record<string, ReadinessCheck>): Promise<{ ready: boolean; checks: Record<string, string> }> {
  const results: Record<string, string> = {};
  await Promise.all(
    Object.entries(checks).map(async ([name, check]) => {
      try {
        results[name] = (await check()) ? 'ok' : 'failing';
      } catch {
        results[name] = 'failing';
      }
    }),
  );
  return { ready: Object.values(results).every((result) => result === 'ok'), checks: results };
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
      void readiness(options.checks).then((result) =>
        reply(result.ready ? 200 : 503, 'application/json', JSON.stringify({ status: result.ready ? 'ok' : 'unavailable', checks: result.checks })),
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
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(options.port, options.host ?? '0.0.0.0', () => resolve());
  });
  const port = (server.address() as AddressInfo).port;
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
