import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { chmodSync, mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { createServer, type Server } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { ensureInfrastructure, type Reporter, stopLocalInfrastructure } from './infrastructure.ts';
import { reservePorts } from './ports.ts';
import { type Endpoint, probeNats, probePostgres, probeRedis } from './probes.ts';

const machine = {
  postgres: { host: '127.0.0.1', port: 5432 },
  redis: { host: '127.0.0.1', port: 6379 },
  nats: { host: '127.0.0.1', port: 4222 },
};

function recorder(): Reporter & { lines: string[] } {
  const lines: string[] = [];
  return { lines, info: (message) => void lines.push(message), warn: (message) => void lines.push(`warning: ${message}`) };
}

async function freeEndpoint(): Promise<Endpoint> {
  const [port] = await reservePorts([{ name: 'test', port: 0 }]);
  return { host: '127.0.0.1', port: port as number };
}

describe('probes', () => {
  let impostor: Server;
  let impostorEndpoint: Endpoint;

  before(async () => {
    // Something that is none of the three: answers every connection with an HTTP error, after the client speaks.
    impostor = createServer((socket) => {
      socket.once('data', () => socket.end('HTTP/1.1 400 Bad Request\r\n\r\n'));
      socket.on('error', () => undefined);
    });
    await new Promise<void>((resolve) => impostor.listen(0, '127.0.0.1', resolve));
    impostorEndpoint = { host: '127.0.0.1', port: (impostor.address() as { port: number }).port };
  });
  after(() => new Promise((resolve) => impostor.close(resolve)));

  test("the machine's PostgreSQL, Redis and NATS with JetStream are recognized", async () => {
    assert.deepEqual(await probePostgres(machine.postgres), { state: 'ready' });
    assert.deepEqual(await probeRedis(machine.redis), { state: 'ready' });
    assert.deepEqual(await probeNats(machine.nats), { state: 'ready' });
  });

  test('a port nothing listens on is absent', async () => {
    const endpoint = await freeEndpoint();
    for (const probe of [probePostgres, probeRedis, probeNats]) assert.equal((await probe(endpoint)).state, 'absent');
  });

  test('another program on the port is told apart from the real service', async () => {
    assert.equal((await probePostgres(impostorEndpoint)).state, 'wrong');
    assert.equal((await probeRedis(impostorEndpoint)).state, 'wrong');
    assert.deepEqual(await probeNats(impostorEndpoint, 300), { state: 'wrong', reason: 'it does not greet like a NATS server' });
    // The probes speak each other's protocols: none mistakes another service for its own.
    assert.equal((await probePostgres(machine.redis, 500)).state, 'wrong');
    assert.equal((await probeRedis(machine.postgres, 500)).state, 'wrong');
    assert.equal((await probeNats(machine.redis, 300)).state, 'wrong');
  });

  test('a NATS server without JetStream is refused, and ensureInfrastructure will not work around it', async () => {
    const endpoint = await freeEndpoint();
    const server = spawn('nats-server', ['-a', endpoint.host, '-p', String(endpoint.port)], { stdio: 'ignore' });
    try {
      let result = await probeNats(endpoint);
      for (let tries = 0; result.state === 'absent' && tries < 50; tries += 1) {
        await new Promise((resolve) => setTimeout(resolve, 100));
        result = await probeNats(endpoint);
      }
      assert.deepEqual(result, { state: 'wrong', reason: 'NATS is running without JetStream (start it with -js)' });
      await assert.rejects(ensureInfrastructure({ dataDir: join(tmpdir(), 'unused'), logger: recorder(), endpoints: { ...machine, nats: endpoint } }), {
        message: `NATS: something on 127.0.0.1:${endpoint.port} is in the way: NATS is running without JetStream (start it with -js)`,
      });
    } finally {
      server.kill();
    }
  });
});

describe('ensureInfrastructure', () => {
  const dataDir = mkdtempSync(join(tmpdir(), 'notify-infra-'));
  // As root, PostgreSQL runs as the postgres user, who must be able to reach the data folder.
  chmodSync(dataDir, 0o755);
  after(async () => {
    await stopLocalInfrastructure({ dataDir, logger: recorder() });
    rmSync(dataDir, { recursive: true, force: true });
  });

  test('services that already answer are left alone and nothing is written', async () => {
    const logger = recorder();
    assert.deepEqual(await ensureInfrastructure({ dataDir, logger, endpoints: machine }), { postgres: 'reachable', redis: 'reachable', nats: 'reachable' });
    assert.deepEqual(readdirSync(dataDir), []);
    assert.deepEqual(logger.lines, [
      'PostgreSQL: reachable on 127.0.0.1:5432, left as it is',
      'Redis: reachable on 127.0.0.1:6379, left as it is',
      'NATS: reachable on 127.0.0.1:4222, left as it is',
    ]);
  });

  test('missing services are started with their data under the data folder, found again, then stopped', async () => {
    const endpoints = { postgres: await freeEndpoint(), redis: await freeEndpoint(), nats: await freeEndpoint() };
    const logger = recorder();
    assert.deepEqual(await ensureInfrastructure({ dataDir, logger, endpoints }), { postgres: 'started', redis: 'started', nats: 'started' });
    assert.deepEqual(readdirSync(dataDir).sort(), ['nats', 'postgres', 'redis']);
    assert.ok(logger.lines.some((line) => line.startsWith('PostgreSQL: creating a cluster in')));
    assert.deepEqual(await probePostgres(endpoints.postgres), { state: 'ready' });
    assert.deepEqual(await probeRedis(endpoints.redis), { state: 'ready' });
    assert.deepEqual(await probeNats(endpoints.nats), { state: 'ready' });

    assert.deepEqual(await ensureInfrastructure({ dataDir, logger: recorder(), endpoints }), { postgres: 'reachable', redis: 'reachable', nats: 'reachable' });

    assert.deepEqual(await stopLocalInfrastructure({ dataDir, logger: recorder() }), ['postgres', 'redis', 'nats']);
    assert.equal((await probePostgres(endpoints.postgres)).state, 'absent');
    assert.equal((await probeRedis(endpoints.redis)).state, 'absent');
    assert.equal((await probeNats(endpoints.nats)).state, 'absent');
  });
});
