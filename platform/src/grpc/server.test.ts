import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { status } from '@grpc/grpc-js';
import { authProto } from '@notify/proto';
import type { auth } from '@notify/proto';
import { silentLogger } from '@notify/test/harness/logger.ts';
import { UserError } from '../errors.ts';
import { createRegistry } from '../metrics.ts';
import { GrpcClient } from './client.ts';
import { RemoteError } from './errors.ts';
import { GrpcServer } from './server.ts';

const logger = silentLogger();
const registry = createRegistry('test');
const token = 'internal-token-for-tests-0123456789';
let server: GrpcServer;
let address: string;

before(async () => {
  server = new GrpcServer({ logger, registry });
  server.add(
    authProto.AuthService.service,
    {
      async ListKeyPrefixes(): Promise<auth.KeyPrefixes__Output> {
        return { prefixes: [] };
      },
      async Authorize(request: auth.AuthorizeRequest__Output): Promise<auth.AuthorizeResponse__Output> {
        if (request.apiKey !== 'good') throw new UserError(status.UNAUTHENTICATED, 'invalid_key', 'unknown key');
        return { keyId: 1, projectId: 2, organizationId: request.organizationId, plan: null, sendRate: '' };
      },
    },
    [token],
  );
  address = `127.0.0.1:${await server.listen(0, '127.0.0.1')}`;
});

after(async () => {
  await server.close(1_000);
});

test('a call with the internal token reaches the handler', async () => {
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
    assert.match(error.message, /internal token/);
    return true;
  });
  client.close();
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
