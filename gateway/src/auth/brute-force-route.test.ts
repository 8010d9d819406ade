// The brute-force limit as the send route applies it: through real gRPC clients against a stand-in auth-svc that
// counts its Authorize calls, a real Redis, and the client address Koa derives with and without trusted proxies.
import assert from 'node:assert/strict';
import { randomBytes, randomUUID } from 'node:crypto';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, before, test } from 'node:test';
import { status } from '@grpc/grpc-js';
import { createRegistry, GrpcClient, GrpcServer, UserError } from '@notify/platform';
import { type auth, authProto, type dispatch, dispatchProto } from '@notify/proto';
import { testEnvironment } from '@notify/test/harness/environment.ts';
import { silentLogger } from '@notify/test/harness/logger.ts';
import type { Redis } from 'ioredis';
import { createApp } from '../app.ts';
import { SendRateLimiter } from '../rate-limit/limiter.ts';
import { connectRedis } from '../rate-limit/redis.ts';
import { loadedDirectory } from '../testing/key-directory.ts';
import { gatewayCaller } from '../testing/serve-app.ts';
import { standIn } from '../testing/stand-in.ts';
import { BruteForceGuard, createBruteForceMetrics } from './brute-force-guard.ts';

const quiet = silentLogger();
const validKey = 'nk_0123456789abcdef.valid';
const authorizeCalls: string[] = [];
let services: GrpcServer;
let redis: Redis;
const keyPrefix = `notify-t-${randomBytes(4).toString('hex')}:`;
const servers: Server[] = [];
const clients: Array<{ close(): void }> = [];
/** Gateways on the same services: one taking the TCP peer as the client, one behind a trusted proxy. */
const gateways = { direct: '', proxied: '' };

before(async () => {
  services = new GrpcServer({ logger: quiet, registry: createRegistry('stand-ins') });
  services.add(
    authProto.AuthService.service,
    standIn(authProto.AuthService.service, {
      async Authorize(request: auth.AuthorizeRequest__Output): Promise<auth.AuthorizeResponse__Output> {
        authorizeCalls.push(request.apiKey);
        if (request.apiKey !== validKey) throw new UserError(status.UNAUTHENTICATED, 'api_key_unknown', 'unknown or revoked key');
        return { keyId: 1, projectId: 2, organizationId: 7, plan: null, sendRate: '', test: false, scopes: ['send'], fromDomains: [] };
      },
    }),
    [gatewayCaller],
  );
  services.add(
    dispatchProto.DispatchService.service,
    standIn(dispatchProto.DispatchService.service, {
      async Send(): Promise<dispatch.SendResponse__Output> {
        return { messageId: 1, status: 'queued', celeryTaskId: randomUUID(), idempotentReplay: false, organizationAccepted: 1, sendAt: '', replayableForMs: 0 };
      },
    }),
    [gatewayCaller],
  );
  const address = `127.0.0.1:${await services.listen(0, '127.0.0.1')}`;
  redis = connectRedis(testEnvironment.redisUrl, quiet);
  await new Promise((resolve) => redis.once('ready', resolve));
  gateways.direct = await serve(address, 0);
  gateways.proxied = await serve(address, 1);
});

after(async () => {
  for (const server of servers) {
    server.closeAllConnections();
    await new Promise((resolve) => server.close(resolve));
  }
  for (const client of clients) client.close();
  const keys = await redis.keys(`${keyPrefix}*`);
  if (keys.length > 0) await redis.del(...keys);
  await redis.quit();
  await services.close(1_000);
});

/** A gateway with a limit of 3 failures a minute per address, trusting `hops` proxies; returns its URL. */
async function serve(servicesAddress: string, hops: number): Promise<string> {
  const options = { token: gatewayCaller.token, deadlineMs: 2_000 };
  const authClient = new GrpcClient(authProto.AuthService.service, servicesAddress, options);
  const dispatchClient = new GrpcClient(dispatchProto.DispatchService.service, servicesAddress, options);
  clients.push(authClient, dispatchClient);
  const prefix = `${keyPrefix}${hops}:`;
  const app = createApp({
    auth: authClient,
    dispatch: dispatchClient,
    rateLimiter: new SendRateLimiter({ redis, keyPrefix: prefix, defaultRate: { points: 1_000, windowSeconds: 60 }, replicas: 1, logger: quiet }),
    readRateLimiter: new SendRateLimiter({
      redis,
      policy: 'read',
      keyPrefix: prefix,
      defaultRate: { points: 1_000, windowSeconds: 60 },
      replicas: 1,
      logger: quiet,
    }),
    bruteForce: new BruteForceGuard({
      redis,
      keyPrefix: prefix,
      rate: { points: 3, windowSeconds: 60 },
      replicas: 1,
      directory: await loadedDirectory(),
      metrics: createBruteForceMetrics(createRegistry('brute-force')),
      logger: quiet,
    }),
    trustedProxyHops: hops,
    readiness: {},
    logger: quiet,
    registry: createRegistry('gateway-test'),
    maxBodyBytes: 262_144,
    maxBatchBodyBytes: 5_242_880,
  });
  const server = createServer(app.callback());
  servers.push(server);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
}

const body = JSON.stringify({ template: 'welcome', to: 'ana@example.com', channel: 'email', data: {} });

async function send(url: string, headers: Record<string, string>): Promise<{ status: number; headers: Headers; body: unknown }> {
  const response = await fetch(`${url}/api/v1/send/`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'x-organization-id': '7', ...headers },
    body,
  });
  return { status: response.status, headers: response.headers, body: await response.json() };
}

test('past the limit a guessing address is answered 429 {detail} without a call to auth-svc, while a valid key from it is accepted', async () => {
  assert.equal((await send(gateways.direct, { authorization: `Api-Key ${validKey}` })).status, 202);
  const statuses = [];
  for (let attempt = 0; attempt < 4; attempt++) statuses.push((await send(gateways.direct, { authorization: `Api-Key nk_guess.${attempt}` })).status);
  assert.deepEqual(statuses, [401, 401, 401, 429]);
  const callsWhenBlocked = authorizeCalls.length;
  const blocked = await send(gateways.direct, { authorization: 'Api-Key nk_guess.more', 'accept-language': 'es' });
  assert.equal(blocked.status, 429);
  assert.deepEqual(Object.keys(blocked.body as object), ['detail']);
  const seconds = blocked.headers.get('retry-after');
  assert.match(seconds ?? '', /^[1-9][0-9]*$/);
  assert.equal((blocked.body as { detail: string }).detail, `La solicitud fue limitada. Se espera que esté disponible en ${seconds} segundos.`);
  assert.equal(blocked.headers.get('www-authenticate'), null);
  assert.equal(blocked.headers.get('ratelimit'), null, 'not counted against any key');
  assert.equal((await send(gateways.direct, { authorization: 'Api-Key not/a key' })).status, 429, 'a malformed key is refused alike');
  assert.equal(authorizeCalls.length, callsWhenBlocked, 'blocked guesses reach auth-svc no more');
  assert.equal((await send(gateways.direct, { authorization: `Api-Key ${validKey}` })).status, 202);
});

test('no credential, or another scheme, is no guess: answered 401, never counted or blocked', async () => {
  // The direct gateway blocked 127.0.0.1 in the test above.
  const credentials: Array<Record<string, string>> = [{}, { authorization: `Bearer ${validKey}` }, { authorization: 'Api-Key' }];
  for (const headers of credentials) {
    const response = await send(gateways.direct, headers);
    assert.equal(response.status, 401, JSON.stringify(headers));
    assert.equal(response.headers.get('www-authenticate'), 'Api-Key');
  }
  const fresh = [];
  for (let attempt = 0; attempt < 5; attempt++) fresh.push((await send(gateways.proxied, { 'x-forwarded-for': '203.0.113.20' })).status);
  for (let attempt = 0; attempt < 3; attempt++)
    fresh.push((await send(gateways.proxied, { authorization: 'Api-Key nk_guess.z', 'x-forwarded-for': '203.0.113.20' })).status);
  assert.deepEqual(fresh, [401, 401, 401, 401, 401, 401, 401, 401], 'requests without a key did not use up the limit');
});

test('without trusted proxies X-Forwarded-For is ignored: forged addresses do not escape the block', async () => {
  // The direct gateway blocked 127.0.0.1 in the test above.
  assert.equal((await send(gateways.direct, { authorization: 'Api-Key nk_guess.x', 'x-forwarded-for': '198.51.100.77' })).status, 429);
});

test('behind one trusted proxy each client is counted by the address the proxy appended, not by what the client wrote', async () => {
  const through = (client: string, forged?: string) => ({ authorization: 'Api-Key nk_guess.y', 'x-forwarded-for': forged ? `${forged}, ${client}` : client });
  const first = [];
  for (let attempt = 0; attempt < 4; attempt++) first.push((await send(gateways.proxied, through('203.0.113.10', `10.0.0.${attempt}`))).status);
  assert.deepEqual(first, [401, 401, 401, 429], 'entries written before the proxy are ignored');
  assert.equal((await send(gateways.proxied, through('203.0.113.11'))).status, 401, 'another client behind the same proxy is not blocked');
});
