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
