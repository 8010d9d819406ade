// TLS of the internal gRPC calls. Plaintext when nothing is configured (the local stack); in a cluster the servers
// present a certificate whose names are their Service DNS names, and the clients verify it against the CA that issued
// it. The caller tokens still decide who may call what: TLS keeps them, and the mail data, off the wire in clear.
import { readFileSync } from 'node:fs';
import * as grpc from '@grpc/grpc-js';
import { ConfigError, text } from '../config.ts';

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

export function serverCredentials(settings: { readonly grpcTlsCertFile: string; readonly grpcTlsKeyFile: string }): grpc.ServerCredentials {
  if (settings.grpcTlsCertFile === '' && settings.grpcTlsKeyFile === '') return grpc.ServerCredentials.createInsecure();
  if (settings.grpcTlsCertFile === '' || settings.grpcTlsKeyFile === '') throw new ConfigError(['GRPC_TLS_CERT_FILE and GRPC_TLS_KEY_FILE go together']);
  const keyPair = { cert_chain: pem('GRPC_TLS_CERT_FILE', settings.grpcTlsCertFile), private_key: pem('GRPC_TLS_KEY_FILE', settings.grpcTlsKeyFile) };
  // No client certificates: callers prove who they are with their tokens.
  return grpc.ServerCredentials.createSsl(null, [keyPair], false);
}

export function channelCredentials(settings: { readonly grpcTlsCaFile: string }): grpc.ChannelCredentials {
  if (settings.grpcTlsCaFile === '') return grpc.credentials.createInsecure();
  return grpc.credentials.createSsl(pem('GRPC_TLS_CA_FILE', settings.grpcTlsCaFile));
}
