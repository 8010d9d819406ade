// dispatch-svc's environment (docs/settings.md's table is generated from these declarations). The database, NATS,
// token and test-fault settings are the platform's shared groups; the variables every service reads come from runService.
import {
  adminTokenSetting,
  boolean,
  bounceTokenSetting,
  custom,
  databaseSettings,
  duration,
  gatewayTokenSetting,
  grpcServerTlsSettings,
  integer,
  jetStreamSettings,
  mailerTokenSetting,
  natsSettings,
  parseRetention,
  testFaultSettings,
} from '@notify/platform';
import { dataKeySetting, parseDnsServers } from '@notify/platform/mail';
import { dispatchTestFaults } from './outbox/test-fault.ts';

export const configSpec = {
  grpcPort: integer('GRPC_PORT', {
    description: 'port of the gRPC server (DispatchService, TemplateAdminService, health)',
    default: 50052,
    min: 0,
    max: 65535,
  }),
  ...databaseSettings({ maxPoolSize: 200 }),
  ...natsSettings,
  ...jetStreamSettings,
  ...gatewayTokenSetting,
  ...mailerTokenSetting,
  ...bounceTokenSetting,
  ...adminTokenSetting,
  ...grpcServerTlsSettings,
  // Verifies the unsubscribe links the mailers sign (ReportService.Unsubscribe).
  ...dataKeySetting,
  idempotencyTtlMs: duration('NOTIFY_IDEMPOTENCY_TTL', { description: 'how long an Idempotency-Key replays its first response', default: '24h', minMs: 1_000 }),
  outboxRelayIntervalMs: duration('OUTBOX_RELAY_INTERVAL', { description: 'pause between two passes of the outbox relay', default: '1s', minMs: 50 }),
  outboxRelayMinAgeMs: duration('OUTBOX_RELAY_MIN_AGE', {
    description: 'age an outbox row reaches before the relay republishes it (the send path publishes it first)',
    default: '5s',
    minMs: 0,
  }),
  scheduleReleaseIntervalMs: duration('SCHEDULE_RELEASE_INTERVAL', {
    description:
      'pause between two passes of the releaser that queues scheduled sends (`send_at`) when they are due: a message is queued within about this long after its time',
    default: '250ms',
    minMs: 50,
  }),
  deliverabilityIntervalMs: duration('DELIVERABILITY_INTERVAL', {
    description: 'how often the per-project bounce and complaint gauges (notify_project_*) are recomputed from the last day of events',
    default: '1m',
    minMs: 1_000,
  }),
  renderWorkers: integer('PANEL_RENDER_WORKERS', {
    description:
      "worker threads the web panel's template previews and message subjects render in: a template that runs to its time limit holds one of them, never the service",
    default: 2,
    min: 1,
    max: 64,
  }),
  webhookAllowPrivate: boolean('NOTIFY_WEBHOOK_ALLOW_PRIVATE', {
    description: 'accept webhook endpoint URLs over plain http:// (local development; https:// is required otherwise)',
    default: false,
  }),
  webhookEndpointsPerProject: integer('NOTIFY_WEBHOOK_ENDPOINTS_PER_PROJECT', {
    description: 'webhook endpoints one project may have, enabled or not: creating one more is refused (each event is one request per endpoint)',
    default: 20,
    min: 1,
    max: 1_000,
  }),
  dnsServers: custom(
    'DNS_RESOLVER',
    {
      description:
        'DNS servers the verification of sending domains asks (`POST /api/v1/domains/{id}/verify`), comma-separated IP addresses with optional ports (`1.1.1.1`, `10.0.0.2:53`, `[::1]:5353`); empty for the resolvers of the host (/etc/resolv.conf)',
      default: '',
    },
    (raw) => (raw.trim() === '' ? undefined : parseDnsServers(raw)),
  ),
  domainVerifyIntervalMs: duration('DOMAIN_VERIFY_INTERVAL', {
    description: 'pause between two passes of the verifier of sending domains: a verification asked for runs within about this long',
    default: '1s',
    minMs: 50,
  }),
  messageRetentionHours: custom(
    'NOTIFY_MESSAGE_RETENTION',
    {
      description:
        'how long a message in a final state (sent, failed, canceled, bounced, complained) is kept after its last change, with its events, outbox rows, idempotency record and webhook deliveries, in days or hours (`30d`, `36h`); an organization may have its own (`notifyctl org update --retention`)',
      default: '30d',
    },
    parseRetention,
  ),
  retentionPurgeIntervalMs: duration('RETENTION_PURGE_INTERVAL', {
    description: 'pause between two passes of the retention purge (one replica at a time purges)',
    default: '10m',
    minMs: 1_000,
  }),
  retentionPurgeBatchSize: integer('RETENTION_PURGE_BATCH_SIZE', {
    description: 'messages the retention purge deletes per transaction',
    default: 1_000,
    min: 1,
    max: 10_000,
  }),
  retentionPurgePauseMs: duration('RETENTION_PURGE_PAUSE', {
    description: 'pause between two batches of the retention purge, which leaves the database to sending',
    default: '100ms',
    minMs: 0,
  }),
  ...testFaultSettings(dispatchTestFaults, 'kill the process after a send commits (`exit-after-commit`) or after its job is published (`exit-after-publish`)'),
};
