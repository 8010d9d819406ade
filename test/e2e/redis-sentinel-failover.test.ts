// Redis that fails over (docs/operations.md, "Redis with Sentinel"): two gateway replicas find their Redis through three
// sentinels (REDIS_SENTINELS, REDIS_SENTINEL_NAME; REDIS_URL names a host that does not exist, so only the sentinels
// can lead them to it). Under a steady load of sends the master is SIGKILLed: no answer is ever a 5xx, the rate limit
// falls back to each replica's in-memory share and returns to the budget shared through the promoted replica
// (docs/contract.md, "Rate limit"), and a panel session the replica had copied still works.
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import { assertAccepted, assertDetailOnly } from '../harness/contract-shapes.ts';
import { type GatewayReplica, startGatewayReplica } from '../harness/gateway-process.ts';
import { PanelVisitor } from '../harness/panel-visitor.ts';
import { type PrivateRedisSentinel, type RedisNode, startPrivateRedisSentinel } from '../harness/private-redis-sentinel.ts';
import { sendVia, type TimedResult } from '../harness/send-via.ts';
import { type System, startSystem, type Tenant } from '../harness/system.ts';
import { anotherKey, validBody } from '../harness/tenants.ts';
import { waitFor } from '../harness/wait.ts';

const rate = 6;
const share = rate / 2;
const timings = { downAfterMs: 1_000, failoverTimeoutMs: 3_000 };
const email = 'ops@sentinel.example';
const password = 'correct horse battery staple';
const secrets = mkdtempSync(join(tmpdir(), 'notify-sentinel-e2e-'));
let system: System;
let redis: PrivateRedisSentinel;
let replicas: GatewayReplica[] = [];
/** The public URLs of the two gateway replicas. */
let urls: readonly [string, string];
let tenant: Tenant;
const body = validBody('welcome');

before(async () => {
  [system, redis] = await Promise.all([startSystem({ env: { NOTIFY_PUBLIC_SEND_RATE: `${rate}/min` } }), startPrivateRedisSentinel(timings)]);
  const env = {
    REDIS_URL: 'redis://named-by-the-sentinels.invalid:6379',
    REDIS_SENTINELS: redis.sentinelsSetting,
    REDIS_SENTINEL_NAME: redis.masterName,
    NOTIFY_GATEWAY_REPLICAS: '2',
  };
  const [first, second] = await Promise.all([startGatewayReplica(system.stack, env), startGatewayReplica(system.stack, env)]);
  replicas = [first, second];
  urls = [first.url, second.url];
  tenant = await system.createTenant('sentinel');
  await system.putTemplate(tenant.projectId, 'welcome');
  const passwordFile = join(secrets, 'password');
  writeFileSync(passwordFile, `${password}\n`, { mode: 0o600 });
  const created = await system.notifyctl(
    'panel-user',
    'create',
    '--org',
    String(tenant.organizationId),
    '--email',
    email,
    '--role',
    'viewer',
    '--password-file',
    passwordFile,
  );
  assert.equal(created.code, 0, created.stderr);
});

after(async () => {
  await Promise.all(replicas.map((replica) => replica.stop()));
  await redis?.stop();
  await system?.stop();
  rmSync(secrets, { recursive: true, force: true });
});

/** 429 `{detail}` with Retry-After in whole seconds. */
function assertThrottled(response: TimedResult): void {
  assertDetailOnly(response, 429);
  assert.ok(Number(response.headers.get('retry-after')) >= 1, response.text);
}

/** The state of a replica's Redis readiness check (`ok`, or `degraded` while it has no Redis). */
async function redisCheck(gatewayUrl: string): Promise<unknown> {
  const response = await fetch(`${gatewayUrl}/readyz`);
  return ((await response.json()) as { checks?: Record<string, unknown> }).checks?.redis;
}

/** The full shared budget through replica 0 alone (its memory share would refuse the 4th), then 429 on replica 1. */
async function assertSharedBudget(key: Tenant, master: RedisNode): Promise<void> {
  for (let sent = 0; sent < rate; sent++) assertAccepted(await sendVia(urls[0], key, body));
  assertThrottled(await sendVia(urls[1], key, body));
  assert.match(await master.command('KEYS', `${system.resources.redisPrefix}send-rate:*`), new RegExp(`send-rate:${rate}/60:?${key.keyId}\\r\\n`));
}

/** Sends through both replicas in turn until stopped; every answer (or failure to get one) is kept. */
function steadyLoad(keys: readonly Tenant[]): { answered: () => number; stop: () => Promise<Array<number | string>> } {
  const answers: Array<number | string> = [];
  let running = true;
  const worker = async (offset: number): Promise<void> => {
    for (let sent = offset; running; sent++) {
      const key = keys[sent % keys.length];
      if (!key) throw new Error('no load keys');
      answers.push(
        await sendVia(sent % 2 === 0 ? urls[0] : urls[1], key, body).then(
          (response) => response.status,
          (error: unknown) => `no answer: ${String(error)}`,
        ),
      );
    }
  };
  const workers = [0, 1, 2].map(worker);
  return {
    answered: () => answers.length,
    async stop() {
      running = false;
      await Promise.all(workers);
      return answers;
    },
  };
}

test('through the sentinels the replicas share one budget in the master; when it is killed mid-load they fall back, then share the promoted one, never answering 5xx', {
  timeout: 60_000,
}, async () => {
  const oldMaster = await redis.master();
  await assertSharedBudget(await anotherKey(system, tenant, 'before-failover'), oldMaster);

  // A panel session, copied to the replica before the kill.
  const visitor = new PanelVisitor(urls[0]);
  assert.equal((await visitor.signIn(email, password)).status, 303);
  assert.equal((await visitor.get('/panel/')).status, 200);
  await redis.replicated();

  const loadKeys = await Promise.all([1, 2, 3, 4].map((n) => anotherKey(system, tenant, `load-${n}`)));
  const fallbackKey = await anotherKey(system, tenant, 'during-failover');
  const afterKey = await anotherKey(system, tenant, 'after-failover');
  const load = steadyLoad(loadKeys);
  let answers: Array<number | string> = [];
  try {
    await waitFor(() => load.answered() >= 20, { timeoutMs: 10_000, what: 'the load to be under way before the kill' });
    await oldMaster.kill();
    // Both replicas notice at once; the sentinels need downAfterMs before they even call the master down.
    for (const index of [0, 1] as const)
      await waitFor(async () => (await redisCheck(urls[index])) === 'degraded', {
        timeoutMs: timings.downAfterMs,
        intervalMs: 20,
        what: `replica ${index} to report Redis degraded`,
      });
    // Together, so they are counted before any failover: replica 0's in-memory share, then 429 (the shared budget is 6).
    const during = await Promise.all(Array.from({ length: share + 1 }, () => sendVia(urls[0], fallbackKey, body)));
    assert.deepEqual(during.map((response) => response.status).sort(), [202, 202, 202, 429]);
    for (const response of during) {
      if (response.status === 202) assertAccepted(response);
      else assertThrottled(response);
    }

    const newMaster = await redis.failedOverFrom(oldMaster);
    for (const index of [0, 1] as const)
      await waitFor(async () => (await redisCheck(urls[index])) === 'ok', { timeoutMs: 10_000, what: `replica ${index} to reach the promoted master` });
    await assertSharedBudget(afterKey, newMaster);
    // The session created before the kill is in the promoted replica: still signed in, on either gateway replica.
    assert.equal((await visitor.get('/panel/')).status, 200);
    const elsewhere = new PanelVisitor(urls[1]);
    for (const [name, value] of visitor.cookies) elsewhere.cookies.set(name, value);
    assert.equal((await elsewhere.get('/panel/')).status, 200);
  } finally {
    // Stopped even when an assertion fails, so no worker outlives the test.
    answers = await load.stop();
  }

  const counts = new Map<number | string, number>();
  for (const answer of answers) counts.set(answer, (counts.get(answer) ?? 0) + 1);
  assert.deepEqual(
    [...counts.keys()].filter((answer) => answer !== 202 && answer !== 429),
    [],
    `every answer under load was 202 or 429: ${JSON.stringify([...counts])}`,
  );
  assert.ok((counts.get(202) ?? 0) > 0 && answers.length >= 30, `a steady load: ${JSON.stringify([...counts])}`);
  for (const replica of replicas)
    assert.match(replica.output(), /Redis unreachable: rate limits fall back[\s\S]*Redis reachable again: rate limits are shared/);
});
