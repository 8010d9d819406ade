import assert from 'node:assert/strict';
import { copyFile, mkdtemp, readFile, rename, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import { connect } from 'node:tls';
import { status } from '@grpc/grpc-js';
import { authProto } from '@notify/proto';
import { createGrpcCertificates, type GrpcCertificates } from '@notify/test/harness/grpc-certificates.ts';
import { standIn } from '@notify/test/harness/grpc-stand-in.ts';
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

/** An AuthService that accepts any key, to call over TLS. */
const authorizesAnyKey = () =>
  standIn(authProto.AuthService.service, {
    Authorize: async (request) => ({
      keyId: 1,
      projectId: 2,
      organizationId: request.organizationId,
      plan: null,
      sendRate: '',
      test: false,
      scopes: ['send'],
      fromDomains: [],
    }),
    ListKeyPrefixes: async () => ({ prefixes: [] }),
  });

before(async () => {
  certificates = await createGrpcCertificates();
  server = new GrpcServer({
    logger: silentLogger(),
    registry: createRegistry('tls-test'),
    credentials: serverCredentials({ grpcTlsCertFile: certificates.cert, grpcTlsKeyFile: certificates.key }, { logger: silentLogger() }),
  });
  server.add(authProto.AuthService.service, authorizesAnyKey(), [caller]);
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
    () => serverCredentials({ grpcTlsCertFile: certificates.cert, grpcTlsKeyFile: '' }, { logger: silentLogger() }),
    (error: unknown) => error instanceof ConfigError && /GRPC_TLS_CERT_FILE and GRPC_TLS_KEY_FILE go together/.test(error.message),
  );
  assert.throws(
    () => channelCredentials({ grpcTlsCaFile: '/nonexistent/ca.crt' }),
    (error: unknown) => error instanceof ConfigError && /GRPC_TLS_CA_FILE: cannot read \/nonexistent\/ca.crt/.test(error.message),
  );
});

/** The serial number of the certificate a new TLS connection to `port` is shown (verified against `ca`). */
async function servedSerial(port: number, ca: Buffer): Promise<string> {
  return new Promise((resolve, reject) => {
    const socket = connect({ host: '127.0.0.1', port, ca, servername: 'localhost', ALPNProtocols: ['h2'] }, () => {
      resolve(socket.getPeerCertificate().serialNumber);
      socket.destroy();
    });
    socket.on('error', reject);
  });
}

const serialOf = async (path: string): Promise<string> => {
  const { X509Certificate } = await import('node:crypto');
  return new X509Certificate(await readFile(path)).serialNumber;
};

test('a renewed certificate written over the mounted files is served to new connections without a restart; a mismatched pair is not', async () => {
  // The files as a Secret volume holds them, replaced the way the kubelet does: a new file renamed over the old.
  const mounted = await mkdtemp(join(tmpdir(), 'notify-grpc-mounted-'));
  const certFile = join(mounted, 'tls.crt');
  const keyFile = join(mounted, 'tls.key');
  const replace = async (cert: string, key: string): Promise<void> => {
    await copyFile(cert, `${certFile}.new`);
    await copyFile(key, `${keyFile}.new`);
    await rename(`${keyFile}.new`, keyFile);
    await rename(`${certFile}.new`, certFile);
  };
  await replace(certificates.cert, certificates.key);
  const warnings: string[] = [];
  const logger = silentLogger();
  logger.warn = ((_object: unknown, message: string) => void warnings.push(message)) as typeof logger.warn;
  const renewing = new GrpcServer({
    logger: silentLogger(),
    registry: createRegistry('tls-renewal-test'),
    credentials: serverCredentials({ grpcTlsCertFile: certFile, grpcTlsKeyFile: keyFile }, { logger, reloadIntervalMs: 50 }),
  });
  renewing.add(authProto.AuthService.service, authorizesAnyKey(), [caller]);
  const renewingPort = await renewing.listen(0, '127.0.0.1');
  const ca = await readFile(certificates.ca);
  const waitForSerial = async (serial: string): Promise<void> => {
    for (let tries = 0; tries < 100 && (await servedSerial(renewingPort, ca)) !== serial; tries += 1) await new Promise((resolve) => setTimeout(resolve, 20));
    assert.equal(await servedSerial(renewingPort, ca), serial);
  };
  try {
    await waitForSerial(await serialOf(certificates.cert));
    const renewed = await certificates.renew();
    await replace(renewed.cert, renewed.key);
    await waitForSerial(await serialOf(renewed.cert));
    const tls = client(`127.0.0.1:${renewingPort}`, certificates.ca);
    try {
      assert.equal((await tls.call('Authorize', { apiKey: 'k', organizationId: 4 })).organizationId, 4, 'calls go on over the renewed certificate');
    } finally {
      tls.close();
    }

    // A certificate with another's key: refused, logged, and the renewed pair still served.
    const unrelated = await certificates.renew();
    await replace(unrelated.cert, renewed.key);
    for (let tries = 0; tries < 100 && warnings.length === 0; tries += 1) await new Promise((resolve) => setTimeout(resolve, 20));
    assert.match(warnings[0] ?? '', /do not make a key pair; serving the previous one/);
    assert.equal(await servedSerial(renewingPort, ca), await serialOf(renewed.cert));
  } finally {
    await renewing.close(1_000);
    await rm(mounted, { recursive: true, force: true });
  }
});
