import assert from 'node:assert/strict';
import { Writable } from 'node:stream';
import { after, before, test } from 'node:test';
import { status } from '@grpc/grpc-js';
import type { auth } from '@notify/proto';
import { authProto } from '@notify/proto';
import { standIn } from '@notify/test/harness/grpc-stand-in.ts';
import { silentLogger } from '@notify/test/harness/logger.ts';
import { UserError } from '../errors.ts';
import { createLogger } from '../logger.ts';
import { createRegistry } from '../metrics.ts';
import { GrpcClient } from './client.ts';
import { RemoteError } from './errors.ts';
import { type AsyncHandlers, GrpcServer } from './server.ts';

const logger = silentLogger();
const registry = createRegistry('test');
const gateway = { name: 'gateway', token: 'gateway-token-for-tests-0123456789' };
const admin = { name: 'admin', token: 'admin-token-for-tests-0123456789' };
const token = gateway.token;
const logs: Record<string, unknown>[] = [];
// Never reached: only refusals of the admin service are tested here, and they happen before any handler.
const adminHandlers = Object.fromEntries(
  Object.keys(authProto.AuthAdminService.service).map((method) => [method, () => Promise.reject(new Error(`${method} is not served in these tests`))]),
) as unknown as AsyncHandlers<typeof authProto.AuthAdminService.service>;
let server: GrpcServer;
let address: string;

before(async () => {
  const sink = new Writable({
    write(chunk: Buffer, _encoding, done) {
      for (const line of chunk.toString('utf8').split('\n').filter(Boolean)) logs.push(JSON.parse(line) as Record<string, unknown>);
      done();
    },
  });
  server = new GrpcServer({ logger: createLogger('grpc-server-test', 'debug', sink), registry });
  server.add(
    authProto.AuthService.service,
    standIn(authProto.AuthService.service, {
      async ListKeyPrefixes(): Promise<auth.KeyPrefixes__Output> {
        return { prefixes: [] };
      },
      async Authorize(request: auth.AuthorizeRequest__Output): Promise<auth.AuthorizeResponse__Output> {
        if (request.apiKey !== 'good') throw new UserError(status.UNAUTHENTICATED, 'invalid_key', 'unknown key');
        return { keyId: 1, projectId: 2, organizationId: request.organizationId, plan: null, sendRate: '', test: false, scopes: ['send'], fromDomains: [] };
      },
    }),
    // Least privilege inside one service: the admin may list key prefixes, only the gateway authorizes.
    { Authorize: [gateway], ListKeyPrefixes: [gateway, admin], ListProjectApiKeys: [], CreateProjectApiKey: [], RevokeProjectApiKey: [] },
  );
  server.add(authProto.AuthAdminService.service, adminHandlers, [admin]);
  address = `127.0.0.1:${await server.listen(0, '127.0.0.1')}`;
});

after(async () => {
  await server.close(1_000);
});

test('a call with the gateway token reaches the handler', async () => {
  const client = new GrpcClient(authProto.AuthService.service, address, { token, deadlineMs: 2_000 });
  const response = await client.call('Authorize', { apiKey: 'good', organizationId: 7 });
  assert.equal(response.organizationId, 7);
  assert.equal(response.projectId, 2);
  assert.equal(await client.serving(), true);
  client.close();
});

test('a call without the right token is refused before the handler', async () => {
  const client = new GrpcClient(authProto.AuthService.service, address, { token: 'wrong-token-0123456789', deadlineMs: 2_000 });
  await assert.rejects(client.call('Authorize', { apiKey: 'good', organizationId: 7 }), (error: unknown) => {
    assert.ok(error instanceof RemoteError);
    assert.equal(error.status, status.UNAUTHENTICATED);
    assert.match(error.message, /unknown caller token/);
    return true;
  });
  client.close();
});

test('a known caller is refused PERMISSION_DENIED on a method not granted to it, and the log names the caller, never the token', async () => {
  const asAdmin = new GrpcClient(authProto.AuthService.service, address, { token: admin.token, deadlineMs: 2_000 });
  const asGateway = new GrpcClient(authProto.AuthAdminService.service, address, { token: gateway.token, deadlineMs: 2_000 });
  try {
    assert.deepEqual(await asAdmin.call('ListKeyPrefixes', {}), { prefixes: [] });
    await assert.rejects(asAdmin.call('Authorize', { apiKey: 'good', organizationId: 7 }), (error: unknown) => {
      assert.ok(error instanceof RemoteError);
      assert.equal(error.status, status.PERMISSION_DENIED);
      assert.match(error.message, /admin token may not call \/notify\.auth\.v1\.AuthService\/Authorize/);
      return true;
    });
    await assert.rejects(asGateway.call('ListPlans', {}), (error: unknown) => error instanceof RemoteError && error.status === status.PERMISSION_DENIED);
  } finally {
    asAdmin.close();
    asGateway.close();
  }
  const refusals = logs.filter((line) => line.msg === 'gRPC call refused: the caller may not call this method');
  assert.deepEqual(
    refusals.map((line) => [line.caller, line.method]),
    [
      ['admin', '/notify.auth.v1.AuthService/Authorize'],
      ['gateway', '/notify.auth.v1.AuthAdminService/ListPlans'],
    ],
  );
  const written = JSON.stringify(logs);
  assert.ok(!written.includes(admin.token) && !written.includes(gateway.token), 'no token in the logs');
});

test('one caller name with two tokens is refused when the service is added', () => {
  const other = new GrpcServer({ logger, registry: createRegistry('test-conflict') });
  assert.throws(
    () => other.add(authProto.AuthAdminService.service, adminHandlers, [{ name: 'gateway', token: 'another-token-0123456789' }, gateway]),
    /caller gateway is registered with two different tokens/,
  );
});

test('a UserError crosses the wire with its status and reason', async () => {
  const client = new GrpcClient(authProto.AuthService.service, address, { token, deadlineMs: 2_000 });
  await assert.rejects(client.call('Authorize', { apiKey: 'bad', organizationId: 7 }), (error: unknown) => {
    assert.ok(error instanceof RemoteError);
    assert.equal(error.status, status.UNAUTHENTICATED);
    assert.equal(error.reason, 'invalid_key');
    return true;
  });
  const metrics = await registry.getSingleMetricAsString('notify_grpc_server_handled_total');
  assert.match(metrics, /code="UNAUTHENTICATED"/);
  assert.match(metrics, /code="OK"/);
  client.close();
});

test('health turns NOT_SERVING before the server drains', async () => {
  const client = new GrpcClient(authProto.AuthService.service, address, { token, deadlineMs: 2_000 });
  server.stopServing();
  assert.equal(await client.serving(), false);
  client.close();
});
