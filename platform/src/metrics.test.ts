import assert from 'node:assert/strict';
import { test } from 'node:test';
import { silentLogger } from '@notify/test/harness/logger.ts';
import { checkReadiness, createRegistry, degradable, type ReadinessCheck, startOpsServer } from './metrics.ts';

const up: ReadinessCheck = async () => true;
const down: ReadinessCheck = async () => false;
const broken: ReadinessCheck = async () => {
  throw new Error('connect ECONNREFUSED 10.0.0.7:6379');
};

test('every check answering makes the service ready', async () => {
  assert.deepEqual(await checkReadiness({ database: up, nats: up }), { ready: true, status: 'ok', checks: { database: 'ok', nats: 'ok' } });
  assert.deepEqual(await checkReadiness({}), { ready: true, status: 'ok', checks: {} });
});

test('a check that resolves false or rejects makes the service unavailable', async () => {
  assert.deepEqual(await checkReadiness({ database: up, nats: down, redis: broken }), {
    ready: false,
    status: 'unavailable',
    checks: { database: 'ok', nats: 'failing', redis: 'failing' },
  });
});

test('a degradable dependency that is down reports degraded and leaves the service ready', async () => {
  assert.deepEqual(await checkReadiness({ database: up, redis: degradable(broken), cache: degradable(down) }), {
    ready: true,
    status: 'degraded',
    checks: { database: 'ok', redis: 'degraded', cache: 'degraded' },
  });
  assert.deepEqual(await checkReadiness({ redis: degradable(up) }), { ready: true, status: 'ok', checks: { redis: 'ok' } });
  assert.equal((await checkReadiness({ redis: degradable(broken), database: down })).status, 'unavailable');
});

test('the ops listener answers /readyz with the same verdict, 200 while degraded, and never shows a check error', async () => {
  const logger = silentLogger();
  const checks: Record<string, ReadinessCheck> = { database: up, redis: degradable(broken) };
  const ops = await startOpsServer({ port: 0, host: '127.0.0.1', registry: createRegistry('test'), checks, logger });
  try {
    const degraded = await fetch(`http://127.0.0.1:${ops.port}/readyz`);
    assert.equal(degraded.status, 200);
    assert.deepEqual(await degraded.json(), { status: 'degraded', checks: { database: 'ok', redis: 'degraded' } });
    checks.nats = broken;
    const unavailable = await fetch(`http://127.0.0.1:${ops.port}/readyz`);
    assert.equal(unavailable.status, 503);
    const text = await unavailable.text();
    assert.deepEqual(JSON.parse(text), { status: 'unavailable', checks: { database: 'ok', redis: 'degraded', nats: 'failing' } });
    assert.doesNotMatch(text, /10\.0\.0\.7|ECONNREFUSED/);
  } finally {
    await ops.close();
  }
});
