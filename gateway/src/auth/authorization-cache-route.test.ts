// The authorization cache as the send route uses it: real gRPC clients against a stand-in auth-svc that counts its
// Authorize calls, the brute-force guard on a real Redis, and the cache's metrics. A cached acceptance must look to the
// rest of the route (and to the guard) exactly like auth-svc's own answer; refusals must all still reach auth-svc.
import assert from 'node:assert/strict';
import { randomBytes, randomUUID } from 'node:crypto';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, before, test } from 'node:test';
import { status } from '@grpc/grpc-js';
import { createRegistry, GrpcClient, GrpcServer, type Registry, UserError } from '@notify/platform';
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
import { createAuthorizationCacheMetrics } from './authorization-metrics.ts';
import { callAuthorize } from './authorize.ts';
import { BruteForceGuard, createBruteForceMetrics } from './brute-force-guard.ts';
import { CachedAuthorizer } from './cached-authorizer.ts';

const quiet = silentLogger();
const prefix = 'nk_0123456789abcdef';
const validKey = `${prefix}.${'S'.repeat(43)}`;
/** Keys auth-svc accepts now; a test revokes one by deleting it (and announcing its prefix). */
const accepted = new Set([validKey]);
const revoked = new Set<string>();
const authorizeCalls: string[] = [];
let services: GrpcServer;
let redis: Redis;
const keyPrefix = `notify-t-${randomBytes(4).toString('hex')}:`;
let server: Server;
let url = '';
let registry: Registry;
let authorizations: CachedAuthorizer;
const clients: Array<{ close(): void }> = [];

before(async () => {
  services = new GrpcServer({ logger: quiet, registry: createRegistry('stand-ins') });
  services.add(
    authProto.AuthService.service,
    standIn(authProto.AuthService.service, {
      async Authorize(request: auth.AuthorizeRequest__Output): Promise<auth.AuthorizeResponse__Output> {
        authorizeCalls.push(request.apiKey);
        if (revoked.has(request.apiKey)) throw new UserError(status.UNAUTHENTICATED, 'api_key_revoked', 'revoked key');
        if (!accepted.has(request.apiKey)) {
          const reason = request.apiKey.startsWith(`${prefix}.`) ? 'api_key_wrong_secret' : 'api_key_unknown';
          throw new UserError(status.UNAUTHENTICATED, reason, 'unknown key or wrong secret');
        }
        if (request.organizationId !== 7) throw new UserError(status.PERMISSION_DENIED, 'permission_denied', 'not this organization');
        return {
          keyId: 1,
          projectId: 2,
          organizationId: 7,
          plan: { planId: 1, name: 'free', suspended: false, monthlyQuota: 0 },
          sendRate: '',
          test: false,
          scopes: ['send'],
          fromDomains: [],
        };
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

  const options = { token: gatewayCaller.token, deadlineMs: 2_000 };
  const authClient = new GrpcClient(authProto.AuthService.service, address, options);
  const dispatchClient = new GrpcClient(dispatchProto.DispatchService.service, address, options);
  clients.push(authClient, dispatchClient);
  registry = createRegistry('gateway-test');
  const metrics = createAuthorizationCacheMetrics(registry);
  authorizations = new CachedAuthorizer({
    authorize: callAuthorize(authClient),
    ttlMs: 60_000,
    maxEntries: 100,
    lookups: metrics.lookups,
  });
  authorizations.resume(); // as the invalidation listener does once its subscription is confirmed
  const app = createApp({
    auth: authClient,
    authorizations,
    dispatch: dispatchClient,
    rateLimiter: new SendRateLimiter({ redis, keyPrefix, defaultRate: { points: 1_000, windowSeconds: 60 }, replicas: 1, logger: quiet }),
    readRateLimiter: new SendRateLimiter({ redis, policy: 'read', keyPrefix, defaultRate: { points: 1_000, windowSeconds: 60 }, replicas: 1, logger: quiet }),
    bruteForce: new BruteForceGuard({
      redis,
      keyPrefix,
      rate: { points: 3, windowSeconds: 60 },
      replicas: 1,
      directory: await loadedDirectory(),
      metrics: createBruteForceMetrics(createRegistry('brute-force')),
      logger: quiet,
    }),
    readiness: {},
    logger: quiet,
    registry,
    maxBodyBytes: 262_144,
    maxBatchBodyBytes: 5_242_880,
  });
  server = createServer(app.callback());
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});

after(async () => {
  server.closeAllConnections();
  await new Promise((resolve) => server.close(resolve));
  for (const client of clients) client.close();
  const keys = await redis.keys(`${keyPrefix}*`);
  if (keys.length > 0) await redis.del(...keys);
  await redis.quit();
  await services.close(1_000);
});

const body = JSON.stringify({ template: 'welcome', to: 'ana@example.com', channel: 'email', data: {} });

async function send(apiKey: string, organization = '7'): Promise<{ status: number; body: Record<string, unknown> }> {
  const response = await fetch(`${url}/api/v1/send/`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: `Api-Key ${apiKey}`, 'x-organization-id': organization },
    body,
  });
  return { status: response.status, body: (await response.json()) as Record<string, unknown> };
}

async function cacheLookups(): Promise<{ hit: number; miss: number }> {
  const text = await registry.metrics();
  const count = (result: string) => Number(new RegExp(`^notify_gateway_auth_cache_total\\{[^}]*result="${result}"[^}]*\\} (\\d+)`, 'm').exec(text)?.[1]);
  return { hit: count('hit'), miss: count('miss') };
}

test('a key auth-svc accepted is answered from the cache: later sends make no Authorize call, and are counted as hits', async () => {
  assert.deepEqual(await cacheLookups(), { hit: 0, miss: 0 }, 'both series exist from the start');
  for (let attempt = 0; attempt < 3; attempt++) assert.equal((await send(validKey)).status, 202);
  assert.deepEqual(authorizeCalls, [validKey]);
  assert.deepEqual(await cacheLookups(), { hit: 2, miss: 1 });
  // The 400 for a bad header and the 403 for another organization are still auth-svc's answers, never the cache's.
  assert.equal((await send(validKey, 'abc')).status, 400);
  assert.equal((await send(validKey, '8')).status, 403);
  assert.equal(authorizeCalls.length, 3);
});

test('guesses of the cached key secret are all judged by auth-svc and limited for that key; the key itself still passes from the cache', async () => {
  authorizeCalls.length = 0;
  const statuses = [];
  for (let attempt = 0; attempt < 4; attempt++) statuses.push((await send(`${prefix}.${String(attempt).repeat(43)}`)).status);
  assert.deepEqual(statuses, [401, 401, 401, 429], 'the same answers as without a cache');
  assert.equal(authorizeCalls.length, 4, 'every guess was judged by auth-svc');
  assert.equal((await send(`${prefix}.${'x'.repeat(43)}`)).status, 429, 'the key is limited');
  assert.equal(authorizeCalls.length, 5, 'judged too: a real key is always judged');
  assert.equal((await send(validKey)).status, 202, 'the right secret passes its limited key');
  assert.equal(authorizeCalls.length, 5, 'answered from the cache');
  assert.equal((await send(`nk_${'0'.repeat(16)}.${'y'.repeat(43)}`)).status, 401, "the address was not charged for the key's failures");
});

test('once its prefix is announced revoked the key is judged by auth-svc again, and its refusals count against it', async () => {
  accepted.delete(validKey);
  revoked.add(validKey);
  authorizations.invalidatePrefix(prefix);
  authorizeCalls.length = 0;
  const before = await cacheLookups();
  // The key is over its limit (test above): judged by auth-svc since the cache let go of it, refused as revoked, 429.
  assert.equal((await send(validKey)).status, 429);
  assert.equal((await send(validKey)).status, 429);
  assert.deepEqual(authorizeCalls, [validKey, validKey], 'never answered from the cache again');
  const lookups = await cacheLookups();
  assert.deepEqual({ hit: lookups.hit - before.hit, miss: lookups.miss - before.miss }, { hit: 0, miss: 2 });
});
