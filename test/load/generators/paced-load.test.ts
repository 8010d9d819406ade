import assert from 'node:assert/strict';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, before, test } from 'node:test';
import { runBatch } from './batch-load.ts';
import { runPaced } from './paced-load.ts';

let server: Server;
let url: string;
let concurrent = 0;
let mostConcurrent = 0;
const seen: string[] = [];

before(async () => {
  server = createServer((request, response) => {
    concurrent += 1;
    mostConcurrent = Math.max(mostConcurrent, concurrent);
    seen.push(request.url ?? '');
    request.resume();
    if (request.url === '/hang') return; // never answers
    setTimeout(() => {
      concurrent -= 1;
      response.writeHead(request.url === '/replay' ? 202 : 201, request.url === '/replay' ? { 'idempotent-replayed': 'true' } : {});
      response.end('{}');
    }, 5);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});

after(async () => {
  server.closeAllConnections();
  await new Promise((resolve) => server.close(resolve));
});

const body = Buffer.from('{}');

test('a paced run starts rate x duration requests, spread over the duration, and counts their statuses', async () => {
  const started = performance.now();
  const result = await runPaced({
    url,
    rate: 200,
    durationS: 0.5,
    connections: 8,
    request: (index) => ({ path: index % 2 ? '/replay' : '/new', headers: {}, body }),
  });
  const elapsedMs = performance.now() - started;
  assert.equal(result.sent, 100);
  assert.deepEqual(result.statuses, { '201': 50, '202': 50 });
  assert.equal(result.replayed, 50);
  assert.equal(result.errors + result.timeouts, 0);
  assert.ok(elapsedMs >= 480, `the requests were spread over the duration, not sent at once (${elapsedMs} ms)`);
  assert.ok(result.latencyMs.p50 >= 5, 'latency includes the server time');
});

test('requests unanswered at the deadline count as timeouts and do not hold the run', async () => {
  const started = performance.now();
  const result = await runPaced({ url, rate: 20, durationS: 0.2, connections: 2, timeoutMs: 300, request: () => ({ path: '/hang', headers: {}, body }) });
  assert.equal(result.sent, 4);
  assert.equal(result.timeouts, 4);
  assert.equal(result.completed, 0);
  assert.ok(performance.now() - started < 2_000);
});

test('a batch sends each request once, in order, with at most `connections` in flight', async () => {
  seen.length = 0;
  mostConcurrent = 0;
  concurrent = 0;
  const requests = Array.from({ length: 30 }, (_, index) => ({ path: `/new?${index}`, headers: {}, body }));
  const result = await runBatch({ url, connections: 3, requests });
  assert.equal(result.completed, 30);
  assert.deepEqual(
    seen,
    requests.map((request) => request.path),
  );
  assert.ok(mostConcurrent <= 3, `at most 3 at once, saw ${mostConcurrent}`);
});
