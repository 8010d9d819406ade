// The gateway's authorization cache against the running services (two gateway replicas): an accepted key is answered
// without asking auth-svc, yet revoking it or changing its plan takes effect on every replica within a second, carried
// by auth-svc's announcements over NATS. A gateway that cannot reach NATS caches nothing and keeps serving.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { assertAccepted, assertCoded, assertUnauthenticated } from '../../harness/contract-shapes.ts';
import { freePort } from '../../harness/free-port.ts';
import { type GatewayReplica, startGatewayReplica } from '../../harness/gateway-process.ts';
import { sendVia, type TimedResult } from '../../harness/send-via.ts';
import { type System, startSystem, type Tenant } from '../../harness/system.ts';
import { anotherKey, validBody } from '../../harness/tenants.ts';
import { waitFor } from '../../harness/wait.ts';

let system: System;
let tenant: Tenant;
let replica: GatewayReplica;
/** Every gateway of the system: its public URL and its metrics port. */
let gateways: Array<{ name: string; url: string; metricsPort: number }>;
const body = validBody('welcome');

before(async () => {
  system = await startSystem();
  tenant = await system.createTenant('auth-cache');
  await system.putTemplate(tenant.projectId, 'welcome');
  replica = await startGatewayReplica(system.stack);
  gateways = [
    { name: 'gateway', url: system.gatewayUrl, metricsPort: system.stack.ports.metrics.gateway },
    { name: 'replica', url: replica.url, metricsPort: replica.metricsPort },
  ];
  // Readiness does not wait for NATS (the gateway serves without it); these tests are about the cache in use.
  for (const gateway of gateways) {
    await waitFor(async () => ((await readiness(gateway.url)).nats === 'ok' ? true : undefined), {
      timeoutMs: 10_000,
      what: `${gateway.name} to subscribe to key invalidations`,
    });
  }
});

after(async () => {
  await replica?.stop();
  await system?.stop();
});

/** GET /readyz: its status and the state of the gateway's NATS check. */
async function readiness(gatewayUrl: string): Promise<{ status: number; nats: unknown }> {
  const response = await fetch(`${gatewayUrl}/readyz`);
  const answer = (await response.json()) as { checks?: Record<string, unknown> };
  return { status: response.status, nats: answer.checks?.nats };
}

/** A gateway's notify_gateway_auth_cache_total, by result. */
async function cacheLookups(metricsPort: number): Promise<{ hit: number; miss: number }> {
  const text = await (await fetch(`http://127.0.0.1:${metricsPort}/metrics`)).text();
  const count = (result: string): number =>
    Number(new RegExp(`^notify_gateway_auth_cache_total\\{[^}]*result="${result}"[^}]*\\} (\\d+)`, 'm').exec(text)?.[1] ?? NaN);
  return { hit: count('hit'), miss: count('miss') };
}

/** Sends through every gateway until it answers `status`; fails if one still has not `withinMs` after `since`. */
async function everyGatewayAnswers(key: Pick<Tenant, 'apiKey' | 'organizationId'>, status: number, since: number, withinMs: number): Promise<TimedResult[]> {
  const answers: TimedResult[] = [];
  for (const gateway of gateways) {
    let response = await sendVia(gateway.url, key, body);
    while (response.status !== status && performance.now() - since < withinMs) {
      await new Promise((resolve) => setTimeout(resolve, 20));
      response = await sendVia(gateway.url, key, body);
    }
    assert.equal(response.status, status, `${gateway.name}, ${Math.round(performance.now() - since)} ms after the change: ${response.status} ${response.text}`);
    answers.push(response);
  }
  return answers;
}

/** Sends with `key` through every gateway until each has answered it from its cache at least once. */
async function cachedEverywhere(key: Pick<Tenant, 'apiKey' | 'organizationId'>): Promise<void> {
  for (const gateway of gateways) {
    const before = await cacheLookups(gateway.metricsPort);
    for (let sent = 0; sent < 2; sent++) assertAccepted(await sendVia(gateway.url, key, body));
    const after = await cacheLookups(gateway.metricsPort);
    assert.ok(after.hit > before.hit, `${gateway.name} answered the second send from its cache: ${JSON.stringify({ before, after })}`);
  }
}

test('a key every gateway holds in its cache is refused 401 by all of them within a second of its revocation', async () => {
  const doomed = await anotherKey(system, tenant, 'cached-then-revoked');
  await cachedEverywhere(doomed);
  await system.authAdmin.call('RevokeApiKey', { id: doomed.keyId });
  const revokedAt = performance.now();
  for (const refusal of await everyGatewayAnswers(doomed, 401, revokedAt, 1_000)) assertUnauthenticated(refusal);
  console.log(`revocation honoured by every gateway ${Math.round(performance.now() - revokedAt)} ms after RevokeApiKey returned`);
  // Only that key: the tenant's other key is still answered, from the caches too.
  await cachedEverywhere(tenant);
});

test('suspending a plan its keys are cached under is refused plan_blocked within a second, and resuming it lifts that as fast', async () => {
  const suspended = await system.createTenant('auth-cache-suspended');
  await system.putTemplate(suspended.projectId, 'welcome');
  await cachedEverywhere(suspended);
  await system.authAdmin.call('UpdatePlan', { id: suspended.planId, suspended: true });
  const suspendedAt = performance.now();
  for (const refusal of await everyGatewayAnswers(suspended, 403, suspendedAt, 1_000)) assertCoded(refusal, 403, 'plan_blocked');
  await system.authAdmin.call('UpdatePlan', { id: suspended.planId, suspended: false });
  const resumedAt = performance.now();
  for (const answer of await everyGatewayAnswers(suspended, 202, resumedAt, 1_000)) assertAccepted(answer);
});

test('a gateway that cannot reach NATS is ready, caches nothing, and refuses a revoked key at once', async () => {
  const isolated = await startGatewayReplica(system.stack, { NATS_URL: `nats://127.0.0.1:${await freePort()}` });
  try {
    assert.deepEqual(await readiness(isolated.url), { status: 200, nats: 'degraded' });
    const key = await anotherKey(system, tenant, 'no-nats');
    const before = await cacheLookups(isolated.metricsPort);
    for (let sent = 0; sent < 3; sent++) assertAccepted(await sendVia(isolated.url, key, body));
    const after = await cacheLookups(isolated.metricsPort);
    assert.deepEqual({ hit: after.hit - before.hit, miss: after.miss - before.miss }, { hit: 0, miss: 3 }, 'every send asked auth-svc');
    await system.authAdmin.call('RevokeApiKey', { id: key.keyId });
    assertUnauthenticated(await sendVia(isolated.url, key, body));
    assert.match(isolated.output(), /NATS unreachable: authorizations are not cached/);
  } finally {
    await isolated.stop();
  }
});
