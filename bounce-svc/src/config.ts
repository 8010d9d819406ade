// bounce-svc's environment variables, validated at start (see platform/src/config.ts). NOTIFY_DATA_KEY and BOUNCE_DOMAIN
// are the ones the mailers sign return paths with: a report is only trusted when its token verifies under the same key.
import { bounceTokenSetting, duration, grpcClientTlsSettings, integer, text } from '@notify/platform';
import { bounceDomainSetting, dataKeySetting } from '@notify/platform/mail';

export const bounceConfig = {
  ...dataKeySetting,
  ...bounceDomainSetting,
  smtpPort: integer('BOUNCE_SMTP_PORT', {
    description: "port of the SMTP listener reports arrive on (the bounce domain's MX points at it); 0 picks a free one",
    default: 2526,
    min: 0,
    max: 65535,
  }),
  smtpHost: text('BOUNCE_SMTP_HOST', { description: 'address the SMTP listener binds to', default: '0.0.0.0' }),
  maxBytes: integer('BOUNCE_MAX_BYTES', {
    description: 'largest report accepted, announced with SMTP SIZE (a report quotes at most the original message)',
    default: 10 * 1024 * 1024,
    min: 1_024,
  }),
  // What a replica lets its clients take: it is an MX anyone may connect to. See docs/operations.md for the memory they add up to.
  maxHeldBytes: integer('BOUNCE_MAX_HELD_BYTES', {
    description:
      'bytes of reports held in memory at once, all sessions together (at least BOUNCE_MAX_BYTES); a report that would pass it is read to its end, dropped and answered 451, and its sender retries',
    default: 32 * 1024 * 1024,
    min: 1_024,
  }),
  maxClients: integer('BOUNCE_MAX_CLIENTS', {
    description: 'SMTP connections open at once; past it a new one is answered 421 and closed',
    default: 200,
    min: 1,
  }),
  maxClientsPerAddress: integer('BOUNCE_MAX_CLIENTS_PER_ADDRESS', {
    description:
      'SMTP sessions one client address may hold at once (421 past it), so one host cannot take every connection; raise it when a relay or source NAT puts many senders behind one address',
    default: 20,
    min: 1,
  }),
  sessionTimeoutMs: duration('BOUNCE_SESSION_TIMEOUT', {
    description: 'longest SMTP session; past it the session is ended with 421 and the sender reconnects for the rest',
    default: '5m',
    minMs: 1_000,
  }),
  commandTimeoutMs: duration('BOUNCE_COMMAND_TIMEOUT', {
    description: 'time a client has for each SMTP command, and the longest silence while it sends a report; 421 past it',
    default: '60s',
    minMs: 1_000,
  }),
  maxCommands: integer('BOUNCE_MAX_COMMANDS', { description: 'SMTP commands one session may send; 421 past it', default: 1_000, min: 10 }),
  maxRecipients: integer('BOUNCE_MAX_RECIPIENTS', {
    description: 'recipients (RCPT TO, one report each) one session may send; 452 past them, and the sender delivers the rest in another session',
    default: 100,
    min: 1,
  }),
  tlsKeyFile: text('BOUNCE_TLS_KEY_FILE', { description: 'PEM private key for STARTTLS; STARTTLS is offered only with a key and a certificate', default: '' }),
  tlsCertFile: text('BOUNCE_TLS_CERT_FILE', { description: 'PEM certificate (chain) for STARTTLS', default: '' }),
  dispatchSvcAddr: text('DISPATCH_SVC_ADDR', { description: 'gRPC target of dispatch-svc, which applies the reports', default: '127.0.0.1:50052' }),
  ...bounceTokenSetting,
  ...grpcClientTlsSettings,
  grpcDeadlineMs: duration('GRPC_DEADLINE', {
    description: 'deadline of each call to dispatch-svc; past it the reporting server is told to retry (451)',
    default: '5s',
    minMs: 1,
  }),
};
