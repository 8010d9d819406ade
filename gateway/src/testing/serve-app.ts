// Test support: the gateway app (with its panel when asked) on a free port with real gRPC clients, a real Redis limiter
// and captured log lines.
import { randomBytes } from 'node:crypto';
import { createServer, request as httpRequest, type IncomingHttpHeaders, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Writable } from 'node:stream';
import { createLogger, createRegistry, degradable, GrpcClient, loadConfig, type Rate, type Registry } from '@notify/platform';
import { authProto, dispatchProto } from '@notify/proto';
import { testEnvironment } from '@notify/test/harness/environment.ts';
import { createApp } from '../app.ts';
import { configSpec } from '../config.ts';
import { createPanelDeps, type PanelDeps } from '../panel/dependencies.ts';
import { SendRateLimiter } from '../rate-limit/limiter.ts';
import { connectRedis } from '../rate-limit/redis.ts';
import { UnsubscribeLimiter } from '../unsubscribe/unsubscribe-limiter.ts';

/** The gateway as the stand-in services accept it. */
export const gatewayCaller = { name: 'gateway', token: 'gateway-token-for-gateway-tests' };

export interface ServedApp {
  readonly url: string;
  readonly port: number;
  readonly registry: Registry;
  /** Every log line written so far, as JSON objects. */
  readonly logs: Array<Record<string, unknown>>;
  /** The panel's dependencies (its session store, to sign a test user in), when it was asked for. */
  readonly panel?: PanelDeps;
  close(): Promise<void>;
}

export async function serveApp(options: {
  authAddress: string;
  dispatchAddress: string;
  rate?: Rate;
  /** NOTIFY_PUBLIC_READ_RATE (default 600/min). */
  readRate?: Rate;
  maxBodyBytes?: number;
  maxBatchBodyBytes?: number;
  deadlineMs?: number;
  /** The token presented to the services (default: the one they accept). */
  token?: string;
  /** Redis of the rate limit (default: the machine's; an address where nothing listens tests the fallback). */
  redisUrl?: string;
  /** Serves the panel too, with these of its environment variables (PANEL_*, NOTIFY_TRACE_URL_TEMPLATE) read as main.ts reads them. */
  panelEnv?: Record<string, string>;
  /** Serves /u/ (one-click unsubscribe) too, calling ReportService at dispatchAddress, at this rate per client address. */
  unsubscribeRate?: Rate;
  /** TRUSTED_PROXY_HOPS (default 0: X-Forwarded-* headers are the client's own claims). */
  trustedProxyHops?: number;
}): Promise<ServedApp> {
  const logs: Array<Record<string, unknown>> = [];
  const sink = new Writable({
    write(chunk: Buffer, _encoding, done) {
      for (const line of chunk.toString('utf8').split('\n').filter(Boolean)) logs.push(JSON.parse(line) as Record<string, unknown>);
      done();
    },
  });
  const logger = createLogger('gateway-test', 'debug', sink);
  const registry = createRegistry('gateway-test');
  const grpcOptions = { token: options.token ?? gatewayCaller.token, deadlineMs: options.deadlineMs ?? 2_000 };
  const auth = new GrpcClient(authProto.AuthService.service, options.authAddress, grpcOptions);
  const dispatch = new GrpcClient(dispatchProto.DispatchService.service, options.dispatchAddress, grpcOptions);
  const redis = connectRedis(options.redisUrl ?? testEnvironment.redisUrl, logger);
  // Connected, or known to be unreachable: either way the limiter's behaviour is settled.
  await new Promise((resolve) => redis.once('ready', resolve).once('error', resolve));
  const keyPrefix = `notify-t-${randomBytes(4).toString('hex')}:`;
  const rateLimiter = new SendRateLimiter({ redis, keyPrefix, defaultRate: options.rate ?? { points: 120, windowSeconds: 60 }, replicas: 1, logger });
  const readRateLimiter = new SendRateLimiter({
    redis,
    keyPrefix,
    policy: 'read',
    defaultRate: options.readRate ?? { points: 600, windowSeconds: 60 },
    replicas: 1,
    logger,
  });
  // The panel as main.ts builds it from the gateway's configuration, its sessions under the test's key prefix.
  const panel =
    options.panelEnv &&
    createPanelDeps({
      config: loadConfig(configSpec, {
        AUTH_SVC_ADDR: options.authAddress,
        DISPATCH_SVC_ADDR: options.dispatchAddress,
        GATEWAY_TOKEN: grpcOptions.token,
        GRPC_DEADLINE: `${grpcOptions.deadlineMs}ms`,
        REDIS_KEY_PREFIX: keyPrefix,
        ...options.panelEnv,
      }),
      redis,
      logger,
      registry,
    });
  const reports = options.unsubscribeRate && new GrpcClient(dispatchProto.ReportService.service, options.dispatchAddress, grpcOptions);
  const unsubscribe = reports &&
    options.unsubscribeRate && { reports, limiter: new UnsubscribeLimiter({ redis, keyPrefix, rate: options.unsubscribeRate }), logger };
  const app = createApp({
    auth,
    dispatch,
    rateLimiter,
    readRateLimiter,
    readiness: { 'auth-svc': () => auth.serving(), 'dispatch-svc': () => dispatch.serving(), redis: degradable(async () => (await redis.ping()) === 'PONG') },
    logger,
    registry,
    maxBodyBytes: options.maxBodyBytes ?? 262_144,
    maxBatchBodyBytes: options.maxBatchBodyBytes ?? 5_242_880,
    ...(options.trustedProxyHops !== undefined && { trustedProxyHops: options.trustedProxyHops }),
    ...(panel && { panel: panel.deps }),
    ...(unsubscribe && { unsubscribe }),
  });
  const server: Server = createServer(app.callback());
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as AddressInfo).port;
  return {
    url: `http://127.0.0.1:${port}`,
    port,
    registry,
    logs,
    ...(panel && { panel: panel.deps }),
    async close() {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
      auth.close();
      dispatch.close();
      reports?.close();
      panel?.close();
      if (redis.status !== 'ready') return redis.disconnect();
      const keys = await redis.keys(`${keyPrefix}*`);
      if (keys.length > 0) await redis.del(...keys);
      await redis.quit();
    },
  };
}

export interface RawResponse {
  status: number;
  headers: IncomingHttpHeaders;
  body: string;
}

/**
 * A request written by hand, for what fetch cannot do: announce a Content-Length and send nothing, or stream a chunked
 * body that never ends. `body` chunks are written one by one until the response arrives.
 */
export function rawRequest(
  port: number,
  options: { method?: string; path?: string; headers?: Record<string, string>; chunks?: Iterable<Buffer> },
): Promise<RawResponse> {
  return new Promise((resolve, reject) => {
    const request = httpRequest({ host: '127.0.0.1', port, method: options.method ?? 'POST', path: options.path ?? '/api/v1/send/', headers: options.headers });
    let answered = false;
    request.on('response', (response) => {
      answered = true;
      let body = '';
      response.setEncoding('utf8');
      response.on('data', (chunk: string) => (body += chunk));
      response.on('end', () => resolve({ status: response.statusCode ?? 0, headers: response.headers, body }));
    });
    // The server may close the connection on us while we are still sending: the answer already given is what counts.
    request.on('error', (error) => (answered ? undefined : reject(error)));
    request.flushHeaders();
    if (!options.chunks) return;
    const chunks = options.chunks[Symbol.iterator]();
    const writeNext = (): void => {
      if (answered || request.destroyed) return;
      const next = chunks.next();
      if (next.done) {
        request.end();
        return;
      }
      request.write(next.value, () => setImmediate(writeNext));
    };
    writeNext();
  });
}
