import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { status } from '@grpc/grpc-js';
import { authProto } from '@notify/proto';
import { createGrpcCertificates, type GrpcCertificates } from '@notify/test/harness/grpc-certificates.ts';
import { silentLogger } from '@notify/test/harness/logger.ts';
import { refusal } from '@notify/test/harness/refusal.ts';
import { ConfigError } from '../config.ts';
import { createRegistry } from '../metrics.ts';
import { GrpcClient } from './client.ts';
import { GrpcServer } from './server.ts';
import { channelCredentials, serverCredentials } from './tls.ts';

const caller = { name: 'gateway', token: 'gateway-token-for-tls-tests-0123' };
let certificates: GrpcCertificates;
let server: GrpcServer;
let port: number;

before(async () => {
  certificates = await createGrpcCertificates();
  server = new GrpcServer({
    logger: silentLogger(),
    registry: createRegistry('tls-test'),
    credentials: serverCredentials({ grpcTlsCertFile: certificates.cert, grpcTlsKeyFile: certificates.key }),
  });
  server.add(
    authProto.AuthService.service,
    {
      Authorize: async (request) => ({ keyId: 1, projectId: 2, organizationId: request.organizationId, plan: null, sendRate: '', test: false }),
      ListKeyPrefixes: async () => ({ prefixes: [] }),
    },
    [caller],
  );
  port = await server.listen(0, '127.0.0.1');
});

after(async () => {
  await server?.close(1_000);
  await certificates?.remove();
});

function client(address: string, grpcTlsCaFile: string): GrpcClient<typeof authProto.AuthService.service> {
  return new GrpcClient(authProto.AuthService.service, address, { token: caller.token, deadlineMs: 2_000, credentials: channelCredentials({ grpcTlsCaFile }) });
}

test('a client with the CA reaches a TLS server under the name on its certificate', async () => {
  for (const address of [`127.0.0.1:${port}`, `dns:///localhost:${port}`]) {
    const tls = client(address, certificates.ca);
    try {
      assert.equal((await tls.call('Authorize', { apiKey: 'k', organizationId: 9 })).organizationId, 9, address);
    } finally {
      tls.close();
    }
  }
});

test('a plaintext client is refused by a TLS server, and so is a client trusting another CA', async () => {
  const plaintext = client(`127.0.0.1:${port}`, '');
  const stranger = client(`127.0.0.1:${port}`, certificates.otherCa);
  try {
    assert.equal((await refusal(plaintext.call('Authorize', { apiKey: 'k', organizationId: 9 }))).status, status.UNAVAILABLE);
    assert.equal((await refusal(stranger.call('Authorize', { apiKey: 'k', organizationId: 9 }))).status, status.UNAVAILABLE);
  } finally {
    plaintext.close();
    stranger.close();
  }
});

test('a certificate without its key, or an unreadable file, is a configuration error naming the variable', () => {
  assert.throws(
    () => serverCredentials({ grpcTlsCertFile: certificates.cert, grpcTlsKeyFile: '' }),
    (error: unknown) => error instanceof ConfigError && /GRPC_TLS_CERT_FILE and GRPC_TLS_KEY_FILE go together/.test(error.message),
  );
  assert.throws(
    () => channelCredentials({ grpcTlsCaFile: '/nonexistent/ca.crt' }),
    (error: unknown) => error instanceof ConfigError && /GRPC_TLS_CA_FILE: cannot read \/nonexistent\/ca.crt/.test(error.message),
  );
});
