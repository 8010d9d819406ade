// Certificates for TLS between the services in a test: a throwaway CA and a server certificate it signs for the
// names the clients dial (127.0.0.1, localhost), made with openssl as an operator's CA would make them.
import { execFile } from 'node:child_process';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';

const run = promisify(execFile);

export interface GrpcCertificates {
  /** PEM files: the CA certificate clients verify with, and the server's certificate and key. */
  readonly ca: string;
  readonly cert: string;
  readonly key: string;
  /** A second CA, unrelated to the server's certificate. */
  readonly otherCa: string;
  /** Another certificate and key for the same names from the same CA, as a renewal brings (new files). */
  renew(): Promise<{ cert: string; key: string }>;
  remove(): Promise<void>;
}

async function selfSignedCa(dir: string, name: string): Promise<{ cert: string; key: string }> {
  const cert = join(dir, `${name}.crt`);
  const key = join(dir, `${name}.key`);
  await run('openssl', [
    'req',
    '-x509',
    '-newkey',
    'ec',
    '-pkeyopt',
    'ec_paramgen_curve:P-256',
    '-nodes',
    '-days',
    '1',
    '-subj',
    `/CN=${name}`,
    '-keyout',
    key,
    '-out',
    cert,
    '-addext',
    'basicConstraints=critical,CA:TRUE',
    '-addext',
    'keyUsage=critical,keyCertSign,cRLSign',
  ]);
  return { cert, key };
}

/** A server certificate for the names the clients dial, signed by `ca`; `name` tells its files apart. */
async function serverCertificate(dir: string, ca: { cert: string; key: string }, name: string): Promise<{ cert: string; key: string }> {
  const key = join(dir, `${name}.key`);
  const request = join(dir, `${name}.csr`);
  const cert = join(dir, `${name}.crt`);
  const extensions = join(dir, `${name}.ext`);
  await writeFile(extensions, 'subjectAltName=IP:127.0.0.1,DNS:localhost\nextendedKeyUsage=serverAuth\n');
  await run('openssl', ['req', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:P-256', '-nodes', '-subj', '/CN=notify-grpc', '-keyout', key, '-out', request]);
  await run('openssl', [
    'x509',
    '-req',
    '-in',
    request,
    '-CA',
    ca.cert,
    '-CAkey',
    ca.key,
    '-CAcreateserial',
    '-days',
    '1',
    '-extfile',
    extensions,
    '-out',
    cert,
  ]);
  return { cert, key };
}

export async function createGrpcCertificates(): Promise<GrpcCertificates> {
  const dir = await mkdtemp(join(tmpdir(), 'notify-grpc-tls-'));
  const ca = await selfSignedCa(dir, 'notify-test-ca');
  const otherCa = await selfSignedCa(dir, 'other-ca');
  const { cert, key } = await serverCertificate(dir, ca, 'tls');
  let renewals = 0;
  return {
    ca: ca.cert,
    cert,
    key,
    otherCa: otherCa.cert,
    renew: () => serverCertificate(dir, ca, `renewed-${++renewals}`),
    remove: () => rm(dir, { recursive: true, force: true }),
  };
}
