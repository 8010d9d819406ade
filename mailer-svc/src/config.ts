// mailer-svc's environment variables, validated at start (see platform/src/config.ts).
import { custom, duration, integer, text, url } from '@notify/platform';
import { parseSender } from './delivery/mail-identity.ts';

export const mailerConfig = {
  natsUrl: text('NATS_URL', { description: 'NATS servers, comma-separated', default: 'nats://127.0.0.1:4222' }),
  natsPrefix: text('NOTIFY_NATS_PREFIX', { description: 'prefix of stream, subject and consumer names; empty in production', default: '', pattern: /^[A-Za-z0-9_-]*$/ }),
  natsStreamReplicas: integer('NATS_STREAM_REPLICAS', { description: 'replicas of each JetStream stream (3 on a NATS cluster)', default: 1, min: 1, max: 5 }),
  smtpUrl: url('SMTP_URL', { description: 'SMTP relay, smtp:// or smtps://, credentials in the URL', default: 'smtp://127.0.0.1:2525', protocols: ['smtp', 'smtps'], secret: true }),
  mailFrom: custom('MAIL_FROM', { description: 'From of every message; its domain also names the Message-ID', default: 'Notify <no-reply@notify.localhost>' }, parseSender),
  concurrency: integer('MAILER_CONCURRENCY', { description: 'jobs one replica delivers at once', default: 32, min: 1, max: 1_000 }),
  smtpPoolSize: integer('SMTP_POOL_SIZE', { description: 'SMTP connections one replica keeps open', default: 5, min: 1, max: 100 }),
  maxAttempts: integer('MAILER_MAX_ATTEMPTS', { description: 'delivery attempts before a temporarily refused message fails', default: 10, min: 1, max: 100 }),
  retryBaseMs: duration('MAILER_RETRY_BASE', { description: 'ceiling of the first retry delay; doubles per attempt (full jitter)', default: '1m', minMs: 1 }),
  retryMaxMs: duration('MAILER_RETRY_MAX', { description: 'largest retry delay', default: '1h', minMs: 1 }),
  ackWaitMs: duration('MAILER_ACK_WAIT', { description: 'time a replica may hold a job without a sign of life before it is offered to another', default: '60s', minMs: 5_000 }),
};
