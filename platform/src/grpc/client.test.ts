import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { status } from '@grpc/grpc-js';
import type { auth } from '@notify/proto';
import { authProto } from '@notify/proto';
import { standIn } from '@notify/test/harness/grpc-stand-in.ts';
import { silentLogger } from '@notify/test/harness/logger.ts';
import { UserError } from '../errors.ts';
import { createRegistry, type Registry } from '../metrics.ts';
import { GrpcClient } from './client.ts';
import { GrpcServer } from './server.ts';

const logger = silentLogger();
const token = 'internal-token-for-tests-0123456789';
const authorize = '/notify.auth.v1.AuthService/Authorize';
let server: GrpcServer;
let address: string;

before(async () => {
  server = new GrpcServer({ logger, registry: createRegistry('server') });
  server.add(
    authProto.AuthService.service,
    standIn(authProto.AuthService.service, {
      async ListKeyPrefixes(): Promise<auth.KeyPrefixes__Output> {
        return { prefixes: [] };
      },
      async Authorize(request: auth.AuthorizeRequest__Output): Promise<auth.AuthorizeResponse__Output> {
        if (request.apiKey === 'slow') await new Promise((resolve) => setTimeout(resolve, 300));
        if (request.apiKey !== 'good') throw new UserError(status.PERMISSION_DENIED, 'permission_denied', 'no');
        return { keyId: 1, projectId: 2, organizationId: request.organizationId, plan: null, sendRate: '', test: false, scopes: ['send'], fromDomains: [] };
      },
    }),
    [{ name: 'test', token }],
  );
  address = `127.0.0.1:${await server.listen(0, '127.0.0.1')}`;
});

after(async () => {
  await server.close(1_000);
});

/** The client metrics' samples as `name{labels} value` lines, without the `service` default label. */
async function samples(registry: Registry): Promise<string[]> {
  const text = await registry.metrics();
  return text
    .split('\n')
    .filter((line) => line.startsWith('notify_grpc_client_'))
    .map((line) => line.replace(/,?service="[^"]*"/, '').replace('{,', '{'));
}

test('each call is counted by method and status code, and its duration observed', async () => {
  const registry = createRegistry('caller');
  const client = new GrpcClient(authProto.AuthService.service, address, { token, deadlineMs: 2_000, registry });
  await client.call('Authorize', { apiKey: 'good', organizationId: 7 });
  await client.call('Authorize', { apiKey: 'good', organizationId: 7 });
  await assert.rejects(client.call('Authorize', { apiKey: 'bad', organizationId: 7 }));
  assert.equal(await client.serving(), true);
  client.close();
  const lines = await samples(registry);
  assert.ok(lines.includes(`notify_grpc_client_handled_total{method="${authorize}",code="OK"} 2`), lines.join('\n'));
  assert.ok(lines.includes(`notify_grpc_client_handled_total{method="${authorize}",code="PERMISSION_DENIED"} 1`), lines.join('\n'));
  assert.ok(lines.includes(`notify_grpc_client_handling_seconds_count{method="${authorize}"} 3`), lines.join('\n'));
  assert.ok(!lines.some((line) => line.includes('grpc.health')), 'health checks are not counted');
});

test('a call past its own deadline counts as DEADLINE_EXCEEDED and its time up to the deadline is observed', async () => {
  const registry = createRegistry('caller');
  const client = new GrpcClient(authProto.AuthService.service, address, { token, deadlineMs: 2_000, registry });
  await assert.rejects(client.call('Authorize', { apiKey: 'slow', organizationId: 7 }, { deadlineMs: 50 }));
  client.close();
  const lines = await samples(registry);
  assert.ok(lines.includes(`notify_grpc_client_handled_total{method="${authorize}",code="DEADLINE_EXCEEDED"} 1`), lines.join('\n'));
  const seconds = Number(lines.find((line) => line.startsWith(`notify_grpc_client_handling_seconds_sum{method="${authorize}"}`))?.split(' ')[1]);
  assert.ok(seconds >= 0.045 && seconds < 0.3, `observed ${seconds} s`);
});

test('a call to a server that is not there counts as UNAVAILABLE', async () => {
  const registry = createRegistry('caller');
  // Port 1 on loopback refuses connections at once.
  const nowhere = new GrpcClient(authProto.AuthService.service, '127.0.0.1:1', { token, deadlineMs: 1_000, registry });
  await assert.rejects(nowhere.call('Authorize', { apiKey: 'good', organizationId: 7 }));
  nowhere.close();
  const lines = await samples(registry);
  assert.ok(lines.includes(`notify_grpc_client_handled_total{method="${authorize}",code="UNAVAILABLE"} 1`), lines.join('\n'));
});

test('clients sharing a registry share its metrics, and a client without one records nothing', async () => {
  const registry = createRegistry('caller');
  const first = new GrpcClient(authProto.AuthService.service, address, { token, deadlineMs: 2_000, registry });
  const second = new GrpcClient(authProto.AuthService.service, address, { token, deadlineMs: 2_000, registry });
  const unobserved = new GrpcClient(authProto.AuthService.service, address, { token, deadlineMs: 2_000 });
  await Promise.all([first, second, unobserved].map((client) => client.call('Authorize', { apiKey: 'good', organizationId: 7 })));
  for (const client of [first, second, unobserved]) client.close();
  assert.ok((await samples(registry)).includes(`notify_grpc_client_handled_total{method="${authorize}",code="OK"} 2`));
});
