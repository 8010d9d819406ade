// bounce-svc's environment variables, validated at start (see platform/src/config.ts). NOTIFY_DATA_KEY and BOUNCE_DOMAIN
// are the ones the mailers sign return paths with: a report is only trusted when its token verifies under the same key.
import { bounceTokenSetting, duration, grpcClientTlsSettings, integer, text } from '@notify/platform';
import { bounceDomainSetting, dataKeySetting } from '@notify/platform/mail';

export const bounceConfig = {
  ...dataKeySetting,
  ...bounceDomainSetting,
  smtpPort: integer('BOUNCE_SMTP_PORT', { description: 'port of the SMTP listener reports arrive on (the bounce domain\'s MX points at it); 0 picks a free one', default: 2526, min: 0, max: 65535 }),
  smtpHost: text('BOUNCE_SMTP_HOST', { description: 'address the SMTP listener binds to', default: '0.0.0.0' }),
  maxBytes: integer('BOUNCE_MAX_BYTES', { description: 'largest report accepted, announced with SMTP SIZE (a report quotes at most the original message)', default: 10 * 1024 * 1024, min: 1_024 }),
  tlsKeyFile: text('BOUNCE_TLS_KEY_FILE', { description: 'PEM private key for STARTTLS; STARTTLS is offered only with a key and a certificate', default: '' }),
  tlsCertFile: text('BOUNCE_TLS_CERT_FILE', { description: 'PEM certificate (chain) for STARTTLS', default: '' }),
  dispatchSvcAddr: text('DISPATCH_SVC_ADDR', { description: 'gRPC target of dispatch-svc, which applies the reports', default: '127.0.0.1:50052' }),
  ...bounceTokenSetting,
  ...grpcClientTlsSettings,
  grpcDeadlineMs: duration('GRPC_DEADLINE', { description: 'deadline of each call to dispatch-svc; past it the reporting server is told to retry (451)', default: '5s', minMs: 1 }),
};
