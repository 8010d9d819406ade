// TLS of the internal gRPC calls. Plaintext when nothing is configured (the local stack); in a cluster the servers
// present a certificate whose names are their Service DNS names, and the clients verify it against the CA that issued
// it. The caller tokens still decide who may call what: TLS keeps them, and the mail data, off the wire in clear.
// A server reads its certificate and key again every few seconds: cert-manager renews them in the mounted Secret, and
// new connections get the renewed certificate without a restart.
import { readFileSync } from 'node:fs';
import { createSecureContext } from 'node:tls';
import * as grpc from '@grpc/grpc-js';
import { ConfigError, text } from '../config.ts';
import type { Logger } from '../logger.ts';

/** GRPC_TLS_CERT_FILE and GRPC_TLS_KEY_FILE, read by the gRPC servers (auth-svc, dispatch-svc). */
export const grpcServerTlsSettings = {
  grpcTlsCertFile: text('GRPC_TLS_CERT_FILE', {
    description: 'PEM certificate (chain) of the gRPC server, naming the address its clients dial; empty serves plaintext (needs GRPC_TLS_KEY_FILE)',
    default: '',
  }),
  grpcTlsKeyFile: text('GRPC_TLS_KEY_FILE', { description: 'PEM private key of the gRPC server certificate', default: '' }),
};

/** GRPC_TLS_CA_FILE, read by the gRPC clients (gateway, mailer-svc, bounce-svc, notifyctl). */
export const grpcClientTlsSettings = {
  grpcTlsCaFile: text('GRPC_TLS_CA_FILE', {
    description: "PEM CA certificate the gRPC clients verify auth-svc's and dispatch-svc's certificates with; empty calls them in plaintext",
    default: '',
  }),
};

/** Read at start, so a missing or unreadable file stops the service with the variable's name, not the first call. */
function pem(variable: string, path: string): Buffer {
  try {
    return readFileSync(path);
  } catch (error) {
    throw new ConfigError([`${variable}: cannot read ${path}: ${(error as Error).message}`]);
  }
}

/** How often a server reads its certificate and key files again. */
export const certificateReloadIntervalMs = 10_000;

type IdentityListener = grpc.experimental.IdentityCertificateUpdateListener;

/**
 * The server's certificate and key as grpc-js's certificate provider: read at start (a missing file stops the
 * service), then again every interval. A changed pair is handed to the server, which uses it for new connections; a
 * pair that makes no TLS context (a key that is not the certificate's, as while a non-atomic writer is half done) is
 * logged and the previous pair kept. Kubernetes swaps a Secret volume's files at once, so a renewal is never seen half.
 */
class ReloadedKeyPair implements grpc.experimental.CertificateProvider {
  readonly #files: { readonly certificate: string; readonly privateKey: string };
  readonly #logger: Logger;
  readonly #listeners = new Set<IdentityListener>();
  #current: grpc.experimental.IdentityCertificateUpdate;

  constructor(files: { certificate: string; privateKey: string }, logger: Logger, intervalMs: number) {
    this.#files = files;
    this.#logger = logger;
    this.#current = { certificate: pem('GRPC_TLS_CERT_FILE', files.certificate), privateKey: pem('GRPC_TLS_KEY_FILE', files.privateKey) };
    setInterval(() => this.#reload(), intervalMs).unref();
  }

  #reload(): void {
    let next: grpc.experimental.IdentityCertificateUpdate;
    try {
      next = { certificate: readFileSync(this.#files.certificate), privateKey: readFileSync(this.#files.privateKey) };
      if (next.certificate.equals(this.#current.certificate) && next.privateKey.equals(this.#current.privateKey)) return;
      createSecureContext({ cert: next.certificate, key: next.privateKey });
    } catch (error) {
      this.#logger.warn({ err: error, ...this.#files }, 'the gRPC certificate files changed but do not make a key pair; serving the previous one');
      return;
    }
    this.#current = next;
    this.#logger.info(this.#files, 'gRPC server certificate reloaded');
    for (const listener of this.#listeners) listener(next);
  }

  addIdentityCertificateListener(listener: IdentityListener): void {
    this.#listeners.add(listener);
    // Not at once: grpc-js adds the server's own watcher only after this returns, and would miss the pair.
    queueMicrotask(() => {
      if (this.#listeners.has(listener)) listener(this.#current);
    });
  }

  removeIdentityCertificateListener(listener: IdentityListener): void {
    this.#listeners.delete(listener);
  }

  addCaCertificateListener(): void {
    // No client certificates: callers prove who they are with their tokens.
  }

  removeCaCertificateListener(): void {}
}

export function serverCredentials(
  settings: { readonly grpcTlsCertFile: string; readonly grpcTlsKeyFile: string },
  options: { readonly logger: Logger; readonly reloadIntervalMs?: number },
): grpc.ServerCredentials {
  if (settings.grpcTlsCertFile === '' && settings.grpcTlsKeyFile === '') return grpc.ServerCredentials.createInsecure();
  if (settings.grpcTlsCertFile === '' || settings.grpcTlsKeyFile === '') throw new ConfigError(['GRPC_TLS_CERT_FILE and GRPC_TLS_KEY_FILE go together']);
  const keyPair = new ReloadedKeyPair(
    { certificate: settings.grpcTlsCertFile, privateKey: settings.grpcTlsKeyFile },
    options.logger,
    options.reloadIntervalMs ?? certificateReloadIntervalMs,
  );
  // grpc-js (1.14) names this function's first parameter the CA provider, but hands it to the credentials as the
  // identity: the key pair goes first, and no CA (no client certificates) second.
  return grpc.experimental.createCertificateProviderServerCredentials(keyPair, null, false);
}

export function channelCredentials(settings: { readonly grpcTlsCaFile: string }): grpc.ChannelCredentials {
  if (settings.grpcTlsCaFile === '') return grpc.credentials.createInsecure();
  return grpc.credentials.createSsl(pem('GRPC_TLS_CA_FILE', settings.grpcTlsCaFile));
}
