// One caller's failed keys never lock out another: two gateway replicas sharing Redis, one of them started after the
// keys existed (its caches empty), take a flood of made-up keys and a flood of wrong secrets for a real key's prefix
// from the same address as three valid integrators, who are never refused; the flooders get 429 after the budget and
// the made-up keys cost auth-svc no more than the budget of lookups. Then the same behind one trusted proxy, each
// client known by the X-Forwarded-For entry the proxy appended, whatever it wrote before it.
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { after, before, test } from 'node:test';
import { type GatewayReplica, startGatewayReplica } from '../harness/gateway-process.ts';
import { type System, startSystem, type Tenant } from '../harness/system.ts';

const budget = 10;
let system: System;
const integrators: Tenant[] = [];
const replicas: GatewayReplica[] = [];

before(async () => {
  system = await startSystem({ env: { NOTIFY_AUTH_FAILURE_RATE: `${budget}/min`, NOTIFY_PUBLIC_SEND_RATE: '100000/min', NOTIFY_GATEWAY_REPLICAS: '2' } });
  for (let index = 0; index < 3; index++) {
    const tenant = await system.createTenant(`integrator-${index}`);
    await system.putTemplate(tenant.projectId, 'welcome');
    integrators.push(tenant);
  }
});

after(async () => {
  for (const replica of replicas) await replica.stop();
  await system?.stop();
});

/** A counter of a service's /metrics, summed over the series whose labels include `labels`. */
async function metric(port: number, name: string, labels: string): Promise<number> {
  const text = await (await fetch(`http://127.0.0.1:${port}/metrics`)).text();
  return text
    .split('\n')
    .filter((line) => line.startsWith(`${name}{`) && line.includes(labels))
    .reduce((sum, line) => sum + Number(line.split(' ').pop()), 0);
}

const madeUpKey = (): string => `nk_${randomBytes(8).toString('hex')}.${randomBytes(32).toString('base64url')}`;
const wrongSecretFor = (tenant: Tenant): string => `${tenant.apiKey.split('.')[0]}.${randomBytes(32).toString('base64url')}`;

async function send(gatewayUrl: string, apiKey: string, organizationId: number, headers: Record<string, string> = {}): Promise<number> {
  const response = await fetch(`${gatewayUrl}/api/v1/send/`, {
    method: 'POST',
    headers: { authorization: `Api-Key ${apiKey}`, 'x-organization-id': String(organizationId), 'content-type': 'application/json', ...headers },
    body: JSON.stringify({ template: 'welcome', to: 'ada@example.com', channel: 'email', data: { name: 'Ada' } }),
  });
  await response.arrayBuffer();
  return response.status;
}

interface Flood {
  readonly guesses: number[];
  readonly secrets: number[];
  readonly valid: number[][];
}

/**
 * Everyone at once, each request to the next of the two gateways: 150 made-up keys, 150 wrong secrets for `target`'s
 * key, and 25 sends of each integrator. `addressOf` gives each client's X-Forwarded-For, if any.
 */
async function flood(gateways: readonly string[], target: Tenant, addressOf: (client: string) => Record<string, string>): Promise<Flood> {
  let turn = 0;
  const next = (): string => gateways[turn++ % gateways.length] as string;
  const loop = async (count: number, request: () => Promise<number>): Promise<number[]> => {
    const statuses: number[] = [];
    for (let index = 0; index < count; index++) statuses.push(await request());
    return statuses;
  };
  const [guesses, secrets, ...valid] = await Promise.all([
    loop(150, () => send(next(), madeUpKey(), integrators[0]?.organizationId ?? 0, addressOf('guesser'))),
    loop(150, () => send(next(), wrongSecretFor(target), target.organizationId, addressOf('secret-guesser'))),
    ...integrators.map((tenant, index) => loop(25, () => send(next(), tenant.apiKey, tenant.organizationId, addressOf(`integrator-${index}`)))),
  ]);
  return { guesses: guesses ?? [], secrets: secrets ?? [], valid };
}

const tally = (statuses: readonly number[]): Record<number, number> => {
  const counts: Record<number, number> = {};
  for (const status of statuses) counts[status] = (counts[status] ?? 0) + 1;
  return counts;
};

/** What auth-svc was asked about made-up keys, and how many of its key lookups missed its cache (a database query). */
async function authSvcWork(): Promise<{ unknown: number; lookups: number }> {
  const port = system.stack.ports.metrics.auth;
  return {
    unknown: await metric(port, 'notify_auth_authorize_total', 'outcome="unknown"'),
    lookups: await metric(port, 'notify_auth_cache_lookups_total', 'result="miss"'),
  };
}

function assertFlood(result: Flood, work: { unknown: number; lookups: number }): void {
  for (const [index, statuses] of result.valid.entries()) assert.deepEqual(tally(statuses), { 202: 25 }, `integrator ${index} was refused`);
  assert.deepEqual(tally(result.guesses), { 401: budget, 429: 150 - budget }, 'made-up keys: 401 up to the budget, shared by both replicas, then 429');
  assert.deepEqual(result.guesses.slice(0, budget), Array(budget).fill(401), 'the 429s come after the budget');
  assert.deepEqual(tally(result.secrets), { 401: budget, 429: 150 - budget }, 'wrong secrets: limited per key');
  assert.equal(work.unknown, budget, 'auth-svc was asked about no more made-up keys than the budget');
  // A real key's entry made before the flood may expire during it (AUTH_CACHE_TTL, 10 s, outlasts the flood), so each
  // real key may be looked up twice; the guesses beyond the budget never are.
  assert.ok(
    work.lookups <= budget + 2 * integrators.length,
    `auth-svc looked up ${work.lookups} prefixes in its database: at most the ${budget} allowed guesses and each real key twice`,
  );
}

test('from one address, made-up keys and wrong secrets get 429 after the budget while three valid integrators get 202 throughout', async () => {
  // The stack's gateway learnt the keys from auth-svc's announcements; this one loads them at start, its caches empty.
  replicas.push(await startGatewayReplica(system.stack));
  const gateways = [system.gatewayUrl, (replicas[0] as GatewayReplica).url];
  const before = await authSvcWork();
  const result = await flood(gateways, integrators[0] as Tenant, () => ({}));
  const after = await authSvcWork();
  assertFlood(result, { unknown: after.unknown - before.unknown, lookups: after.lookups - before.lookups });

  // The gateway says which is which.
  const port = (replicas[0] as GatewayReplica).metricsPort;
  assert.ok((await metric(port, 'notify_gateway_auth_failures_total', 'reason="unknown_key"')) > 0);
  assert.ok((await metric(port, 'notify_gateway_auth_failures_total', 'reason="wrong_secret"')) > 0);
  assert.ok((await metric(port, 'notify_gateway_auth_throttled_total', 'scope="address"')) > 0);
  assert.ok((await metric(port, 'notify_gateway_auth_throttled_total', 'scope="key"')) > 0);
});

test('behind one trusted proxy each client is counted by the address the proxy appended; a forged entry before it changes nothing', async () => {
  const proxied = [await startGatewayReplica(system.stack, { TRUSTED_PROXY_HOPS: '1' }), await startGatewayReplica(system.stack, { TRUSTED_PROXY_HOPS: '1' })];
  replicas.push(...proxied);
  const addresses: Record<string, string> = {
    guesser: '198.51.100.7',
    'secret-guesser': '198.51.100.8',
    'integrator-0': '203.0.113.1',
    'integrator-1': '203.0.113.2',
    'integrator-2': '203.0.113.3',
  };
  // Every flooder writes a fresh forged address of its own before the one the proxy appends.
  const addressOf = (client: string): Record<string, string> => ({
    'x-forwarded-for': client.includes('guesser') ? `10.${randomBytes(3).join('.')}, ${addresses[client]}` : (addresses[client] ?? ''),
  });
  const before = await authSvcWork();
  const result = await flood(
    proxied.map((replica) => replica.url),
    integrators[1] as Tenant,
    addressOf,
  );
  const after = await authSvcWork();
  assertFlood(result, { unknown: after.unknown - before.unknown, lookups: after.lookups - before.lookups });
  // Another client behind the same proxy is not the guesser.
  assert.equal(await send((proxied[0] as GatewayReplica).url, madeUpKey(), 1, { 'x-forwarded-for': '198.51.100.99' }), 401);
  assert.equal(await send((proxied[0] as GatewayReplica).url, madeUpKey(), 1, { 'x-forwarded-for': '198.51.100.99, 198.51.100.7' }), 429);
});
