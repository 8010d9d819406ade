// Cases 6 and 7 of the delivery guarantees (docs/delivery-guarantees.md): the system on a PostgreSQL and a Redis of
// this file's own, each stopped and started again under it. While PostgreSQL is down the gateway answers 503 with
// Retry-After (never 500), messages accepted before are not lost, and service resumes once it is back with no service
// restarted. While Redis is down sending goes on (rate limits fall back to memory) and every message is delivered.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { audit, waitForStates } from '../harness/delivery-audit.ts';
import { type PrivatePostgres, startPrivatePostgres } from '../harness/private-postgres.ts';
import { type PrivateRedis, startPrivateRedis } from '../harness/private-redis.ts';
import { startReliableSystem } from '../harness/reliable-system.ts';
import { SmtpScript } from '../harness/smtp-script.ts';
import type { System, Tenant } from '../harness/system.ts';
import { waitFor } from '../harness/wait.ts';

const script = new SmtpScript();
const services = ['auth-svc', 'dispatch-svc', 'mailer-svc', 'gateway'] as const;
let postgres: PrivatePostgres;
let redis: PrivateRedis;
let system: System;
let tenant: Tenant;

before(async () => {
  [postgres, redis] = await Promise.all([startPrivatePostgres(), startPrivateRedis()]);
  system = await startReliableSystem({ postgres, redis, smtpReply: script.reply, env: { NOTIFY_PUBLIC_SEND_RATE: '100000/min' } });
  tenant = await system.createTenant('dependencies');
  await system.putTemplate(tenant.projectId, 'welcome');
});

after(async () => {
  await postgres?.start().catch(() => undefined);
  await system?.stop();
  await Promise.all([postgres?.destroy(), redis?.stop()]);
});

let counter = 0;
const send = () => system.send(tenant, { template: 'welcome', to: `user${++counter}@example.com`, channel: 'email', data: { name: 'Ada' } });

async function acceptMany(count: number): Promise<number[]> {
  const ids: number[] = [];
  for (let n = 0; n < count; n++) {
    const response = await send();
    assert.equal(response.status, 202, response.text);
    ids.push(response.body.message_id as number);
  }
  return ids;
}

describe('PostgreSQL restarted', () => {
  test('while it is down: 503 with Retry-After, nothing accepted before is lost, and sending resumes once it is back without restarting a service', async () => {
    const pids = services.map((service) => system.stack.pid(service));
    const delivered = await acceptMany(5);
    // Accepted, taken by the mailer, and still at the relay when the database goes away.
    script.hold('user');
    const inFlight = await acceptMany(5);
    await waitFor(async () => (script.waiting >= 1 ? true : undefined), { timeoutMs: 10_000, what: 'a mailer to be at the relay' });

    await postgres.stop('fast');
    const refused = await Promise.all(Array.from({ length: 5 }, () => send()));
    for (const response of refused) {
      assert.equal(response.status, 503, response.text);
      assert.equal(response.body.code, 'service_unavailable');
      assert.ok(Number(response.headers.get('retry-after')) >= 1, 'Retry-After names whole seconds');
      assert.doesNotMatch(response.text, /127\.0\.0\.1|ECONNREFUSED|stack/i);
    }
    // The relay answers while the database is still down: the outcomes wait in JetStream for dispatch-svc.
    script.release('user');
    await new Promise((resolve) => setTimeout(resolve, 1_500));

    await postgres.start();
    const resumedAt = performance.now();
    let resumed = await send();
    while (resumed.status !== 202 && performance.now() - resumedAt < 15_000) {
      assert.equal(resumed.status, 503, resumed.text);
      await new Promise((resolve) => setTimeout(resolve, 200));
      resumed = await send();
    }
    assert.equal(resumed.status, 202, resumed.text);
    console.log(`sending resumed ${Math.round(performance.now() - resumedAt)} ms after PostgreSQL was back`);
    const after = [resumed.body.message_id as number, ...(await acceptMany(4))];

    const ids = [...delivered, ...inFlight, ...after];
    await waitForStates(system.db, ids, { timeoutMs: 30_000 });
    const result = await audit(system.db, system.resources.mailDir, ids);
    assert.deepEqual(result.broken, []);
    assert.equal(result.delivered, ids.length);
    assert.deepEqual(
      services.map((service) => system.stack.pid(service)),
      pids,
      'no service was restarted',
    );
  });
});

describe('Redis down', () => {
  test('sending goes on with the in-memory limiter, and every message accepted meanwhile is delivered once', async () => {
    await redis.kill('SIGKILL');
    const ids = await acceptMany(10);
    await redis.restart();
    ids.push(...(await acceptMany(2)));
    await waitForStates(system.db, ids, { timeoutMs: 20_000 });
    const result = await audit(system.db, system.resources.mailDir, ids);
    assert.deepEqual(result.broken, []);
    assert.equal(result.delivered, ids.length);
  });
});
