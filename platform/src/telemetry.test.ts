// Without a collector spans are not recorded, but a service's log lines must still carry the trace they belong to:
// the caller's (traceparent), or a new one. Run in a child process, since tracing is installed by `node --import`.
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { createInterface } from 'node:readline';
import { test } from 'node:test';

// An HTTP server that logs one line per request, inside the request's handler, then answers.
const server = `
  import { createServer } from 'node:http';
  import { createLogger } from '@notify/platform';
  const logger = createLogger('telemetry-test', 'info');
  const server = createServer((req, res) => { logger.info({ path: req.url }, 'handled'); res.end('ok'); });
  server.listen(0, '127.0.0.1', () => console.log(JSON.stringify({ port: server.address().port })));
`;

async function withTracedServer(env: Record<string, string>, run: (port: number, logs: Record<string, unknown>[]) => Promise<void>): Promise<void> {
  const child = spawn(process.execPath, ['--import', '@notify/platform/telemetry-register', '--input-type=module', '-e', server], {
    env: { ...process.env, OTEL_EXPORTER_OTLP_ENDPOINT: '', OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: '', ...env },
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  const logs: Record<string, unknown>[] = [];
  let port: number | undefined;
  const ready = new Promise<void>((resolve) => {
    createInterface({ input: child.stdout }).on('line', (line) => {
      const parsed = JSON.parse(line) as Record<string, unknown>;
      if (typeof parsed['port'] === 'number') {
        port = parsed['port'];
        resolve();
      } else logs.push(parsed);
    });
  });
  try {
    await ready;
    await run(port ?? 0, logs);
  } finally {
    child.kill();
    await once(child, 'exit');
  }
}

const waitForLog = async (logs: Record<string, unknown>[], count: number): Promise<void> => {
  for (let i = 0; i < 100 && logs.length < count; i++) await new Promise((resolve) => setTimeout(resolve, 20));
};

test('without a collector, log lines carry the caller trace id, or a new one per request', async () => {
  await withTracedServer({}, async (port, logs) => {
    const traceId = '4bf92f3577b34da6a3ce929d0e0e4736';
    await fetch(`http://127.0.0.1:${port}/traced`, { headers: { traceparent: `00-${traceId}-00f067aa0ba902b7-01` } });
    await fetch(`http://127.0.0.1:${port}/fresh-1`);
    await fetch(`http://127.0.0.1:${port}/fresh-2`);
    await waitForLog(logs, 3);
    const byPath = new Map(logs.map((line) => [line['path'], line]));
    assert.equal(byPath.get('/traced')?.['trace_id'], traceId);
    const fresh = [byPath.get('/fresh-1')?.['trace_id'], byPath.get('/fresh-2')?.['trace_id']];
    for (const id of fresh) assert.match(String(id), /^(?!0{32})[0-9a-f]{32}$/);
    assert.notEqual(fresh[0], fresh[1]);
  });
});

// What the loader hook wrapped (a module it wraps resolves to a `?iitm=true` URL) and what the instrumentations patched,
// as seen from a module loaded after `--import` as a service's are. Without a collector only HTTP and gRPC are
// instrumented; with one also Koa, pg and ioredis.
const loadedModules = `
  import * as http from 'node:http';
  import * as grpc from '@grpc/grpc-js';
  import Koa from 'koa';
  import pg from 'pg';
  import { Redis } from 'ioredis';
  const patched = (f) => f?.__wrapped === true;
  const wrapped = (specifier) => import.meta.resolve(specifier).endsWith('?iitm=true');
  console.log(JSON.stringify({
    patched: {
      http: patched(http.request) && patched(http.get) && patched(http.Server.prototype.emit),
      grpc: patched(grpc.Client.prototype.makeUnaryRequest) && patched(grpc.Server.prototype.register),
      koa: patched(Koa.prototype.use),
      pg: patched(pg.Client.prototype.query) && patched(pg.Pool.prototype.connect),
      ioredis: patched(Redis.prototype.sendCommand),
    },
    wrapped: Object.fromEntries(['node:http', 'node:https', '@grpc/grpc-js', 'koa', 'pg', 'ioredis', 'pino', 'nodemailer', '@notify/platform'].map((s) => [s, wrapped(s)])),
  }));
`;

async function instrumentedModules(env: Record<string, string>): Promise<{ patched: Record<string, boolean>; wrapped: Record<string, boolean> }> {
  const child = spawn(process.execPath, ['--import', '@notify/platform/telemetry-register', '--input-type=module', '-e', loadedModules], {
    env: { ...process.env, OTEL_EXPORTER_OTLP_ENDPOINT: '', OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: '', ...env },
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  let output = '';
  child.stdout.on('data', (chunk: Buffer) => (output += chunk.toString()));
  const [code] = (await once(child, 'exit')) as [number | null];
  assert.equal(code, 0);
  return JSON.parse(output) as { patched: Record<string, boolean>; wrapped: Record<string, boolean> };
}

test('the loader hook wraps only the modules an enabled instrumentation patches, and those are patched', async () => {
  const others = { pino: false, nodemailer: false, '@notify/platform': false };
  assert.deepEqual(await instrumentedModules({}), {
    patched: { http: true, grpc: true, koa: false, pg: false, ioredis: false },
    wrapped: { 'node:http': true, 'node:https': true, '@grpc/grpc-js': true, koa: false, pg: false, ioredis: false, ...others },
  });
  // A collector that is never reached: nothing is recorded here, so nothing is exported.
  assert.deepEqual(await instrumentedModules({ OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: 'http://127.0.0.1:9/v1/traces' }), {
    patched: { http: true, grpc: true, koa: true, pg: true, ioredis: true },
    wrapped: { 'node:http': true, 'node:https': true, '@grpc/grpc-js': true, koa: true, pg: true, ioredis: true, ...others },
  });
});
