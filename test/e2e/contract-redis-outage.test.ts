// docs/contract.md "Rate limit": the budget is shared by the replicas through Redis; if Redis is unreachable each replica
// keeps serving with an in-memory limiter of its share, and it returns to Redis once Redis is back. Two gateway
// replicas (NOTIFY_GATEWAY_REPLICAS=2, rate 6/min, so a share of 3) run against a private redis-server this file
// stalls, kills and restarts, and a third joins while it is down; the stack's own gateway is not used here.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { assertAccepted, assertDetailOnly } from '../harness/contract-shapes.ts';
import { type GatewayReplica, startGatewayReplica } from '../harness/gateway-process.ts';
import { type PrivateRedis, startPrivateRedis } from '../harness/private-redis.ts';
import { sendVia, type TimedResult } from '../harness/send-via.ts';
import { type System, startSystem, type Tenant } from '../harness/system.ts';
import { anotherKey, validBody } from '../harness/tenants.ts';
import { waitFor } from '../harness/wait.ts';

const rate = 6;
const share = rate / 2;
let system: System;
let redis: PrivateRedis;
let replicas: GatewayReplica[] = [];
let tenant: Tenant;
const body = validBody('welcome');

before(async () => {
  system = await startSystem({ env: { NOTIFY_PUBLIC_SEND_RATE: `${rate}/min` } });
  redis = await startPrivateRedis();
  const env = { REDIS_URL: redis.url, NOTIFY_GATEWAY_REPLICAS: '2' };
  replicas = await Promise.all([startGatewayReplica(system.stack, env), startGatewayReplica(system.stack, env)]);
  tenant = await system.createTenant('redis-outage');
  await system.putTemplate(tenant.projectId, 'welcome');
});

after(async () => {
  await Promise.all(replicas.map((replica) => replica.stop()));
  await redis?.stop();
  await system?.stop();
});

function url(index: number): string {
  const replica = replicas[index];
  if (!replica) throw new Error(`no replica ${index}`);
  return replica.url;
}

/** 429 `{detail}` whose text names the whole seconds of Retry-After. */
function assertThrottled(response: TimedResult): void {
  assertDetailOnly(response, 429);
  const seconds = /in (\d+) seconds\.$/.exec(String(response.body.detail))?.[1];
  assert.equal(response.headers.get('retry-after'), seconds, response.text);
  assert.ok(Number(seconds) >= 1);
}

/** GET /readyz on a replica's public port: its status and the state of its Redis check. */
async function redisReadiness(gatewayUrl: string): Promise<{ status: number; redis: unknown }> {
  const response = await fetch(`${gatewayUrl}/readyz`);
  const body = (await response.json()) as { checks?: Record<string, unknown> };
  return { status: response.status, redis: body.checks?.redis };
}

/** The rate-limit counters of this run that are in the private Redis (by API key id). */
async function countersInRedis(): Promise<string> {
  return redis.command('KEYS', `${system.resources.redisPrefix}send-rate:*`);
}

/** Sends through the replicas in turn, `count` times; every answer must be a 202. */
async function acceptedInTurn(key: Tenant, count: number): Promise<TimedResult[]> {
  const answers: TimedResult[] = [];
  for (let sent = 0; sent < count; sent++) {
    const response = await sendVia(url(sent % replicas.length), key, body);
    assertAccepted(response);
    answers.push(response);
  }
  return answers;
}

test('with Redis up, the two replicas share one budget per key, kept in that Redis', async () => {
  const key = await anotherKey(system, tenant, 'redis-up');
  const answers = await acceptedInTurn(key, rate);
  assert.deepEqual(
    answers.map((response) => response.headers.get('ratelimit')?.split(';')[1]),
    ['r=5', 'r=4', 'r=3', 'r=2', 'r=1', 'r=0'],
  );
  assertThrottled(await sendVia(url(0), key, body));
  assertThrottled(await sendVia(url(1), key, body));
  assert.match(await countersInRedis(), new RegExp(`send-rate:${rate}/60:?${key.keyId}\\r\\n`));
});

test('with Redis stalled (SIGSTOP), requests do not wait on it: each replica answers from memory after a short command timeout', async () => {
  const key = await anotherKey(system, tenant, 'redis-stalled');
  await redis.kill('SIGSTOP');
  try {
    const answers = await Promise.all([sendVia(url(0), key, body), sendVia(url(1), key, body), sendVia(url(0), key, body), sendVia(url(1), key, body)]);
    for (const response of answers) {
      assertAccepted(response);
      assert.ok(response.elapsedMs < 3_000, `answered after ${Math.round(response.elapsedMs)} ms with Redis stalled`);
    }
  } finally {
    await redis.kill('SIGCONT');
  }
});

test('with Redis killed, each replica keeps serving with its share of the rate, at once and never with a 5xx', async () => {
  await redis.kill('SIGKILL');
  const key = await anotherKey(system, tenant, 'redis-down');
  for (const index of [0, 1]) {
    const answers: TimedResult[] = [];
    for (let sent = 0; sent < share; sent++) answers.push(await sendVia(url(index), key, body));
    for (const response of answers) {
      assertAccepted(response);
      // ioredis does not queue commands while offline: nothing waits for a reconnect.
      assert.ok(response.elapsedMs < 1_500, `replica ${index} answered after ${Math.round(response.elapsedMs)} ms without Redis`);
    }
    // The replica's share is used up; the other replica still has its own.
    assertThrottled(await sendVia(url(index), key, body));
  }
  // Other keys are unaffected, and nothing is answered 5xx.
  const other = await anotherKey(system, tenant, 'redis-down-other');
  assertAccepted(await sendVia(url(0), other, body));
  assert.equal((await sendVia(url(1), other, { ...body, channel: 'sms' })).status, 422);
  for (const replica of replicas) {
    assert.ok(replica.pid, 'both replicas still run');
    // Still ready (so a load balancer keeps routing to it), with Redis reported as the degraded part.
    assert.deepEqual(await redisReadiness(replica.url), { status: 200, redis: 'degraded' });
  }
});

test('a replica started while Redis is down becomes ready and serves its share', async () => {
  const late = await startGatewayReplica(system.stack, { REDIS_URL: redis.url, NOTIFY_GATEWAY_REPLICAS: '2' });
  replicas.push(late);
  assert.deepEqual(await redisReadiness(late.url), { status: 200, redis: 'degraded' });
  const key = await anotherKey(system, tenant, 'redis-down-late');
  for (let sent = 0; sent < share; sent++) assertAccepted(await sendVia(late.url, key, body));
  assertThrottled(await sendVia(late.url, key, body));
});

test('when Redis is back on the same port, the replicas return to the budget shared through it', async () => {
  const key = await anotherKey(system, tenant, 'redis-back');
  // Used up in every replica's memory while Redis is down (the late one never saw Redis at all)...
  for (const index of replicas.keys()) {
    for (let sent = 0; sent < share; sent++) assertAccepted(await sendVia(url(index), key, body));
    assertThrottled(await sendVia(url(index), key, body));
  }
  await redis.restart();
  // ...readiness reports Redis `ok` again once this replica's connection is back (`degraded` until then).
  for (const replica of replicas)
    await waitFor(async () => ((await redisReadiness(replica.url)).redis === 'ok' ? true : undefined), {
      timeoutMs: 10_000,
      what: 'the replica to reconnect to Redis',
    });
  // ...the fresh Redis counter governs again: the full shared budget, through every replica in turn, then 429 on each.
  await acceptedInTurn(key, rate);
  for (const index of replicas.keys()) assertThrottled(await sendVia(url(index), key, body));
  assert.match(await countersInRedis(), new RegExp(`send-rate:${rate}/60:?${key.keyId}\\r\\n`));
});
