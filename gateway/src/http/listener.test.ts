import assert from 'node:assert/strict';
import { Agent, request } from 'node:http';
import { test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { listen } from './listener.ts';

function get(port: number): Promise<number> {
  return new Promise((resolve, reject) => {
    request({ host: '127.0.0.1', port, path: '/' }, (response) => {
      response.resume();
      response.on('end', () => resolve(response.statusCode ?? 0));
    })
      .on('error', reject)
      .end();
  });
}

test('a stop lets the request in flight finish, refuses new connections, then drains', { timeout: 5_000 }, async () => {
  let arrived!: () => void;
  const inFlight = new Promise<void>((resolve) => (arrived = resolve));
  const listener = await listen(
    (_request, response) => {
      arrived();
      setTimeout(() => response.end('done'), 300);
    },
    0,
    { host: '127.0.0.1' },
  );
  const answer = get(listener.port);
  await inFlight;
  listener.stopAccepting();
  await assert.rejects(get(listener.port), /ECONNREFUSED/);
  let drained = false;
  const draining = listener.drained().then(() => (drained = true));
  assert.equal(await answer, 200);
  await draining;
  assert.equal(drained, true);
});

/**
 * A client pool's keep-alive connection, as every HTTP client library keeps one: POSTs on one socket, `idleMs` apart.
 * Resolves with each answer's status, and how many connections the server saw.
 */
async function postTwiceOnOneConnection(options: { keepAliveTimeoutMs?: number; idleMs: number }): Promise<{ statuses: number[]; connections: number }> {
  const listener = await listen(
    (incoming, response) => {
      incoming.resume();
      incoming.on('end', () => response.end('accepted'));
    },
    0,
    { host: '127.0.0.1', keepAliveTimeoutMs: options.keepAliveTimeoutMs },
  );
  const agent = new Agent({ keepAlive: true, maxSockets: 1 });
  const sockets = new Set<unknown>();
  const post = () =>
    new Promise<number>((resolve, reject) => {
      const outgoing = request({ host: '127.0.0.1', port: listener.port, method: 'POST', path: '/api/v1/send/', agent }, (response) => {
        sockets.add(response.socket);
        response.resume();
        response.on('end', () => resolve(response.statusCode ?? 0));
      });
      outgoing.on('error', reject);
      outgoing.end('{}');
    });
  try {
    const statuses = [await post()];
    await sleep(options.idleMs);
    statuses.push(await post());
    return { statuses, connections: sockets.size };
  } finally {
    agent.destroy();
    listener.stopAccepting();
    await listener.drained();
  }
}

test('by default an idle connection outlives common load balancer timeouts: a POST after 6 s idle reuses it', { timeout: 15_000 }, async () => {
  // Node's own default (5 s) would have closed it in between: with a pool that sent at that moment, a reset.
  assert.deepEqual(await postTwiceOnOneConnection({ idleMs: 6_000 }), { statuses: [200, 200], connections: 1 });
});

test('a connection idle past the headers timeout but inside HTTP_KEEP_ALIVE_TIMEOUT is served, not reset', { timeout: 30_000 }, async () => {
  // Scaled down from a load balancer's 70 s against the 75 s default: idle 11.5 s, past the 10 s headersTimeout, of a 14 s setting.
  assert.deepEqual(await postTwiceOnOneConnection({ keepAliveTimeoutMs: 14_000, idleMs: 11_500 }), { statuses: [200, 200], connections: 1 });
});
