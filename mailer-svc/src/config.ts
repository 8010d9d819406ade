// mailer-svc's environment variables, validated at start (see platform/src/config.ts).
// The retry defaults are reasoned in docs/delivery-guarantees.md from RFC 5321 section 4.5.4.1: retries settle at
// 30-60 minutes apart and a message is given up after 4 days; the attempt limit is a backstop that the default
// schedule never reaches first (at least 30 min apart at the cap: fewer than 200 attempts fit in 4 days).
// The NATS, token, data key and test-fault settings are the platform's shared groups; docs/settings.md's table is
// generated from these.
import {
  custom,
  duration,
  grpcClientTlsSettings,
  integer,
  jetStreamSettings,
  mailerTokenSetting,
  natsSettings,
  testFaultSettings,
  text,
} from '@notify/platform';
import { bounceDomainSetting, dataKeySetting, parseRelayUrls } from '@notify/platform/mail';
import { maxDestinationConcurrency, parseDestinationLimits, parseMessageRate } from './delivery/destination-limits.ts';
import { parseSender } from './delivery/mail-identity.ts';
import { mailerTestFaults } from './test-fault.ts';

/** NOTIFY_PUBLIC_URL: an http(s) base URL, kept without its trailing slash so paths append to it. */
function parsePublicUrl(raw: string): string {
  let parsed: URL;
  try {
    parsed = new URL(raw);
  } catch {
    throw new Error('must be a URL');
  }
  if (parsed.protocol !== 'https:' && parsed.protocol !== 'http:') throw new Error('must use http or https');
  if (parsed.search || parsed.hash || parsed.username || parsed.password) throw new Error('must have no query, fragment or credentials');
  return parsed.href.replace(/\/+$/, '');
}

export const mailerConfig = {
  ...natsSettings,
  ...jetStreamSettings,
  smtpUrls: custom(
    'SMTP_URL',
    {
      description: 'SMTP relays, smtp:// or smtps://, credentials in the URL; several comma-separated are tried in order, each behind a circuit breaker',
      default: 'smtp://127.0.0.1:2525',
      secret: true,
    },
    parseRelayUrls,
  ),
  mailFrom: custom(
    'MAIL_FROM',
    { description: 'From of every message whose send names no `from`; its domain also names their Message-ID', default: 'Notify <no-reply@notify.localhost>' },
    parseSender,
  ),
  concurrency: integer('MAILER_CONCURRENCY', { description: 'jobs one replica delivers at once', default: 32, min: 1, max: 1_000 }),
  renderWorkers: integer('MAILER_RENDER_WORKERS', {
    description: 'worker threads one replica renders templates in: a template that runs to its time limit holds one of them, never the replica',
    default: 2,
    min: 1,
    max: 64,
  }),
  smtpPoolSize: integer('SMTP_POOL_SIZE', { description: 'SMTP connections one replica keeps open', default: 5, min: 1, max: 100 }),
  maxAttempts: integer('MAILER_MAX_ATTEMPTS', {
    description: 'delivery attempts before a temporarily refused message fails (a backstop behind MAILER_MAX_AGE)',
    default: 200,
    min: 1,
    max: 1_000,
  }),
  maxAgeMs: duration('MAILER_MAX_AGE', {
    description: 'age (from acceptance or re-queueing) after which a temporarily refused message fails',
    default: '4d',
    minMs: 1_000,
  }),
  retryBaseMs: duration('MAILER_RETRY_BASE', {
    description: 'ceiling of the first retry delay; doubles per attempt (equal jitter: the delay is drawn from the upper half)',
    default: '1m',
    minMs: 1,
  }),
  retryMaxMs: duration('MAILER_RETRY_MAX', {
    description: 'largest retry ceiling; retries at the cap come 30-60 min apart by default',
    default: '1h',
    minMs: 1,
  }),
  ackWaitMs: duration('MAILER_ACK_WAIT', {
    description: 'time a replica may hold a job without a sign of life before it is offered to another',
    default: '60s',
    minMs: 5_000,
  }),
  ...dataKeySetting,
  ...bounceDomainSetting,
  publicUrl: custom(
    'NOTIFY_PUBLIC_URL',
    {
      description: "the gateway's public base URL, as recipients reach it: one-click unsubscribe links are `<url>/u/<token>`",
      default: 'http://127.0.0.1:8080',
    },
    parsePublicUrl,
  ),
  dispatchSvcAddr: text('DISPATCH_SVC_ADDR', {
    description: 'gRPC target of dispatch-svc, asked for the DKIM keys of the domains mail is From',
    default: '127.0.0.1:50052',
  }),
  ...mailerTokenSetting,
  ...grpcClientTlsSettings,
  grpcDeadlineMs: duration('GRPC_DEADLINE', { description: 'deadline of each call to dispatch-svc', default: '2s', minMs: 1 }),
  dkimRefreshMs: duration('DKIM_KEY_REFRESH', {
    description:
      "pause between two fetches of each DKIM key the mailer holds (MAIL_FROM's domain's, and each domain a send named `from` on within the last hour): a key added, rotated or removed with `notifyctl domain` takes effect within it; the last key is kept while dispatch-svc cannot answer",
    default: '60s',
    minMs: 100,
  }),
  relayFailureThreshold: integer('RELAY_FAILURE_THRESHOLD', {
    description:
      "consecutive connection-level failures (refused, timed out, session broken) that open a relay's circuit: it is skipped for the next relay of its list",
    default: 3,
    min: 1,
    max: 1_000,
  }),
  relayCoolDownMs: duration('RELAY_COOL_DOWN', {
    description: 'time an open relay circuit waits before one send probes the relay again (its success closes the circuit)',
    default: '30s',
    minMs: 100,
  }),
  relayRoutesRefreshMs: duration('RELAY_ROUTES_REFRESH', {
    description:
      "pause between two fetches of the projects' own relays from dispatch-svc: a `notifyctl project update` takes effect within it; the last lists are kept while dispatch-svc cannot answer",
    default: '15s',
    minMs: 100,
  }),
  // Per-destination throttling (docs/operations.md, "Per-destination throttling"). 20 at once is Postfix's
  // default_destination_concurrency_limit. Postfix sets no rate by default (default_destination_rate_delay = 0), and
  // neither does this in effect: 10000/s does not bind before the concurrency for a destination answering in 2 ms or
  // more (20 / 0.002 s, a relay next door), nor cap the bench's drain into one domain; it gives a pushback a rate to
  // halve from, while the concurrency, halved too, is what slows a domain without a rate of its own.
  destinationConcurrency: integer('MAILER_DESTINATION_CONCURRENCY', {
    description: 'deliveries to one recipient domain at once, all replicas together (halved, down to one per replica, while the domain answers 421 or 4.7.x)',
    default: 20,
    min: 1,
    max: maxDestinationConcurrency,
  }),
  destinationRate: custom(
    'MAILER_DESTINATION_RATE',
    {
      description:
        'messages per second to one recipient domain, all replicas together, as `<count>/<unit>` (halved, down to 1/s, while the domain answers 421 or 4.7.x)',
      default: '10000/s',
    },
    parseMessageRate,
  ),
  destinationLimits: custom(
    'MAILER_DESTINATION_LIMITS',
    {
      description: 'domains with limits of their own, as `<domain>=<concurrency>:<count>/<unit>` separated by commas (e.g. `slow.example=2:5/s`)',
      default: '',
    },
    parseDestinationLimits,
  ),
  ...testFaultSettings(mailerTestFaults, '`exit-after-send` kills the replica after the relay accepted a message, before it is acknowledged'),
};
