// Without a collector spans are not recorded, but a service's log lines must still carry the trace they belong to:
// the caller's (traceparent), or a new one. Run in a child process, since tracing is installed by `node --import`.
// The HTTP servers serve their requests as the gateway's listener does (tracing.ts, tracedRequests).
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { createInterface } from 'node:readline';
import { test } from 'node:test';
import { startOtlpReceiver } from '@notify/test/harness/otlp-receiver.ts';
import { otlpProtocolFromEnvironment } from './telemetry.ts';

// An HTTP server that logs one line per request, inside the request's handler, then answers.
const server = `
  import { createServer } from 'node:http';
  import { finished } from 'node:stream';
  import { createLogger, tracedRequests } from '@notify/platform';
  const logger = createLogger('telemetry-test', 'info');
  // As the gateway's access log does, a line once the response has left too.
  const server = createServer(tracedRequests((req, res) => {
    finished(res, () => logger.info({ path: req.url, when: 'answered' }, 'request'));
    logger.info({ path: req.url, when: 'handled' }, 'handled');
    res.end('ok');
  }));
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
      if (typeof parsed.port === 'number') {
        port = parsed.port;
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

const collectorNeverReached = { OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: 'http://127.0.0.1:9/v1/traces' };

for (const [collector, env] of [
  ['without a collector', {}],
  ['with a collector', collectorNeverReached],
] as const) {
  test(`${collector}, log lines carry the caller trace id, or a new one per request`, async () => {
    await serverLogsTraces(env);
  });
}

async function serverLogsTraces(env: Record<string, string>): Promise<void> {
  await withTracedServer(env, async (port, logs) => {
    const traceId = '4bf92f3577b34da6a3ce929d0e0e4736';
    await fetch(`http://127.0.0.1:${port}/traced`, { headers: { traceparent: `00-${traceId}-00f067aa0ba902b7-01` } });
    await fetch(`http://127.0.0.1:${port}/fresh-1`);
    await fetch(`http://127.0.0.1:${port}/fresh-2`);
    await waitForLog(logs, 6);
    const traceOf = (path: string): unknown => {
      const [handled, answered] = ['handled', 'answered'].map((when) => logs.find((line) => line.path === path && line.when === when)?.trace_id);
      assert.equal(answered, handled, `${path}: the lines of one request carry one trace`);
      return handled;
    };
    assert.equal(traceOf('/traced'), traceId);
    const fresh = [traceOf('/fresh-1'), traceOf('/fresh-2')];
    for (const id of fresh) assert.match(String(id), /^(?!0{32})[0-9a-f]{32}$/);
    assert.notEqual(fresh[0], fresh[1]);
  });
}

// What the loader hook wrapped (a module it wraps resolves to a `?iitm=true` URL) and what the instrumentations patched,
// as seen from a module loaded after `--import` as a service's are. Without a collector only gRPC is instrumented; with
// one also HTTP (the gateway's server, webhook-svc's requests to endpoints), Koa, pg and ioredis.
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
      httpServer: patched(http.Server.prototype.emit),
      httpClient: patched(http.request) && patched(http.get),
      grpc: patched(grpc.Client.prototype.makeUnaryRequest) && patched(grpc.Server.prototype.register),
      koa: patched(Koa.prototype.use),
      pg: patched(pg.Client.prototype.query) && patched(pg.Pool.prototype.connect),
      ioredis: patched(Redis.prototype.sendCommand),
    },
    wrapped: Object.fromEntries(['node:http', 'node:https', '@grpc/grpc-js', 'koa', 'pg', 'ioredis', 'pino', 'nodemailer', '@notify/platform'].map((s) => [s, wrapped(s)])),
  }));
`;

/** Runs `script` in a process started as a service is (`--import` the telemetry, after `imports`), and parses what it printed. */
async function outputUnderTelemetry(script: string, env: Record<string, string>, imports: string[] = []): Promise<unknown> {
  const child = spawn(
    process.execPath,
    [...imports.flatMap((module) => ['--import', module]), '--import', '@notify/platform/telemetry-register', '--input-type=module', '-e', script],
    {
      env: { ...process.env, OTEL_EXPORTER_OTLP_ENDPOINT: '', OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: '', ...env },
      stdio: ['ignore', 'pipe', 'inherit'],
    },
  );
  let output = '';
  child.stdout.on('data', (chunk: Buffer) => (output += chunk.toString()));
  const [code] = (await once(child, 'exit')) as [number | null];
  assert.equal(code, 0);
  return JSON.parse(output);
}

async function instrumentedModules(env: Record<string, string>): Promise<{ patched: Record<string, boolean>; wrapped: Record<string, boolean> }> {
  return (await outputUnderTelemetry(loadedModules, env)) as { patched: Record<string, boolean>; wrapped: Record<string, boolean> };
}

test('the loader hook wraps only the modules an enabled instrumentation patches, and those are patched', async () => {
  const others = { pino: false, nodemailer: false, '@notify/platform': false };
  assert.deepEqual(await instrumentedModules({}), {
    patched: { httpServer: false, httpClient: false, grpc: true, koa: false, pg: false, ioredis: false },
    wrapped: { 'node:http': false, 'node:https': false, '@grpc/grpc-js': true, koa: false, pg: false, ioredis: false, ...others },
  });
  // A collector that is never reached: nothing is recorded here, so nothing is exported.
  assert.deepEqual(await instrumentedModules(collectorNeverReached), {
    patched: { httpServer: true, httpClient: true, grpc: true, koa: true, pg: true, ioredis: true },
    wrapped: { 'node:http': true, 'node:https': true, '@grpc/grpc-js': true, koa: true, pg: true, ioredis: true, ...others },
  });
});

// A request to an integrator's endpoint made while a traced request is handled, and the traceparent the endpoint saw.
const outgoingRequest = `
  import http from 'node:http';
  import { tracedRequests } from '@notify/platform';
  const seen = [];
  const endpoint = http.createServer((req, res) => { seen.push(req.headers.traceparent ?? null); res.end(); });
  await new Promise((resolve) => endpoint.listen(0, '127.0.0.1', resolve));
  const service = http.createServer(tracedRequests((req, res) => {
    http.get({ host: '127.0.0.1', port: endpoint.address().port, path: '/hook' }, (answer) => { answer.resume(); answer.on('end', () => res.end()); });
  }));
  await new Promise((resolve) => service.listen(0, '127.0.0.1', resolve));
  await fetch('http://127.0.0.1:' + service.address().port + '/', { headers: { traceparent: process.env.CALLER_TRACEPARENT } });
  console.log(JSON.stringify(seen));
  process.exit(0);
`;

function traceparentsAtEndpoint(env: Record<string, string>, callerTraceparent: string): Promise<unknown> {
  return outputUnderTelemetry(outgoingRequest, { CALLER_TRACEPARENT: callerTraceparent, ...env });
}

test("a request to an integrator's endpoint carries a trace only when a collector records it", async () => {
  const traceId = '4bf92f3577b34da6a3ce929d0e0e4736';
  const caller = `00-${traceId}-00f067aa0ba902b7-01`;
  // Without a collector nothing records the trace the request is made in: the endpoint is not told of it.
  assert.deepEqual(await traceparentsAtEndpoint({}, caller), [null]);
  // With one, the request is a client span of the trace it was made in, as the endpoint sees.
  const [recorded] = (await traceparentsAtEndpoint(collectorNeverReached, caller)) as [string];
  assert.match(recorded, new RegExp(`^00-${traceId}-(?!00f067aa0ba902b7)[0-9a-f]{16}-01$`));
});

// Every @opentelemetry package a process loads while `--import` starts tracing, recorded by a resolve hook installed
// before it (module.registerHooks sees every import and require of the main thread).
const recordPackages = `data:text/javascript,${encodeURIComponent(`
  import { registerHooks } from 'node:module';
  globalThis.openTelemetryPackages = new Set();
  registerHooks({ resolve(specifier, context, next) {
    const resolved = next(specifier, context);
    const name = /\\/node_modules\\/(@opentelemetry\\/[^/]+)\\//.exec(resolved.url)?.[1];
    if (name) globalThis.openTelemetryPackages.add(name);
    return resolved;
  } });
`)}`;

async function packagesLoadedAtStart(env: Record<string, string>): Promise<string[]> {
  return (await outputUnderTelemetry('console.log(JSON.stringify([...globalThis.openTelemetryPackages].sort()))', env, [recordPackages])) as string[];
}

test('a service starts tracing without the SDK of every signal, and loads the exporter and the in-service instrumentations only for a collector', async () => {
  const exportingOnly = [
    '@opentelemetry/exporter-trace-otlp-proto',
    '@opentelemetry/instrumentation-http',
    '@opentelemetry/instrumentation-ioredis',
    '@opentelemetry/instrumentation-koa',
    '@opentelemetry/instrumentation-pg',
  ];
  // The OTLP exporter's encoder brings the logs' and metrics' SDKs; nothing else asks for them.
  const neverWithout = ['@opentelemetry/sdk-node', '@opentelemetry/sdk-logs', '@opentelemetry/sdk-metrics'];
  const withoutCollector = await packagesLoadedAtStart({});
  // What makes and carries trace ids is there: the tracer provider, the context manager, gRPC's instrumentation.
  for (const needed of ['@opentelemetry/sdk-trace', '@opentelemetry/context-async-hooks', '@opentelemetry/instrumentation-grpc'])
    assert.ok(withoutCollector.includes(needed), `${needed} loaded`);
  for (const name of [...exportingOnly, ...neverWithout]) assert.ok(!withoutCollector.includes(name), `${name} not loaded without a collector`);
  const withCollector = await packagesLoadedAtStart(collectorNeverReached);
  for (const name of exportingOnly) assert.ok(withCollector.includes(name), `${name} loaded with a collector`);
  assert.ok(!withCollector.includes('@opentelemetry/sdk-node'), 'the SDK of every signal not loaded with a collector');
});

// What the SDK's diagnostics write (its console logger writes with the console's own methods, so to stderr), and
// whether the instrumentations patched a service's modules.
const diagnosticsAndPatches = `
  import { diag } from '@opentelemetry/api';
  import * as grpc from '@grpc/grpc-js';
  const written = [];
  process.stderr.write = (chunk) => written.push(String(chunk).trim());
  diag.warn('probe warning');
  diag.info('probe information');
  console.log(JSON.stringify({ written, grpcPatched: grpc.Client.prototype.makeUnaryRequest.__wrapped === true }));
`;

test('OTEL_LOG_LEVEL writes the SDK diagnostics of that level and above; OTEL_SDK_DISABLED=true sets up no tracing at all', async () => {
  assert.deepEqual(await outputUnderTelemetry(diagnosticsAndPatches, {}), { written: [], grpcPatched: true });
  assert.deepEqual(await outputUnderTelemetry(diagnosticsAndPatches, { OTEL_LOG_LEVEL: 'warn' }), { written: ['probe warning'], grpcPatched: true });
  assert.deepEqual(await outputUnderTelemetry(diagnosticsAndPatches, { OTEL_SDK_DISABLED: 'true', OTEL_LOG_LEVEL: 'warn' }), {
    written: [],
    grpcPatched: false,
  });
});

// One span, ended and flushed: the exporter has delivered it (or failed) when the script prints.
const exportOneSpan = `
  import { trace } from '@opentelemetry/api';
  trace.getTracer('probe').startSpan('exported probe').end();
  await trace.getTracerProvider().getDelegate().forceFlush();
  console.log(JSON.stringify({ flushed: true }));
`;

for (const [protocol, transport, contentType, env] of [
  ['http/protobuf (the default)', 'http', 'application/x-protobuf', { OTEL_EXPORTER_OTLP_HEADERS: 'x-collector-tenant=notify-test' }],
  // gRPC's content type stays in the transport: reaching TraceService/Export at all is the proof.
  ['grpc', 'grpc', undefined, { OTEL_EXPORTER_OTLP_PROTOCOL: 'grpc', OTEL_EXPORTER_OTLP_HEADERS: 'x-collector-tenant=notify-test' }],
  [
    'http/json, the per-signal variables winning over the general ones',
    'http',
    'application/json',
    {
      OTEL_EXPORTER_OTLP_PROTOCOL: 'grpc',
      OTEL_EXPORTER_OTLP_TRACES_PROTOCOL: 'http/json',
      OTEL_EXPORTER_OTLP_HEADERS: 'x-collector-tenant=general',
      OTEL_EXPORTER_OTLP_TRACES_HEADERS: 'x-collector-tenant=notify-test',
    },
  ],
] as const) {
  test(`spans reach a collector over OTLP ${protocol}, with the headers the environment names`, async () => {
    const receiver = await startOtlpReceiver(transport);
    try {
      assert.deepEqual(await outputUnderTelemetry(exportOneSpan, { ...env, OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: receiver.tracesUrl }), { flushed: true });
      assert.deepEqual(
        receiver.spans.map((span) => span.name),
        ['exported probe'],
      );
      assert.equal(receiver.undecodable, 0);
      const [headers] = receiver.requestHeaders;
      assert.equal(headers?.['x-collector-tenant'], 'notify-test');
      if (contentType) assert.match(headers?.['content-type'] ?? '', new RegExp(`^${contentType}`));
    } finally {
      await receiver.close();
    }
  });
}

test('an unknown OTLP protocol falls back to http/protobuf, as does none', () => {
  assert.equal(otlpProtocolFromEnvironment({}), 'http/protobuf');
  assert.equal(otlpProtocolFromEnvironment({ OTEL_EXPORTER_OTLP_PROTOCOL: 'grpc' }), 'grpc');
  assert.equal(otlpProtocolFromEnvironment({ OTEL_EXPORTER_OTLP_PROTOCOL: 'grpc', OTEL_EXPORTER_OTLP_TRACES_PROTOCOL: 'http/json' }), 'http/json');
  assert.equal(otlpProtocolFromEnvironment({ OTEL_EXPORTER_OTLP_PROTOCOL: 'thrift' }), 'http/protobuf');
});
