// webhook-svc's environment variables, validated at start (see platform/src/config.ts). The retry schedule, timeout
// and disabling rule are CONTRACT.md's ("Webhooks"); they are settings so tests can run the same code on a short clock.
import { boolean, custom, databaseSettings, duration, integer, jetStreamSettings, natsSettings } from '@notify/platform';
import { dataKeySetting } from '@notify/platform/mail';
import { contractSchedule, parseSchedule } from './delivery/schedule.ts';

export const webhookConfig = {
  ...natsSettings,
  ...jetStreamSettings,
  ...databaseSettings({ maxPoolSize: 100 }),
  ...dataKeySetting,
  allowPrivate: boolean('NOTIFY_WEBHOOK_ALLOW_PRIVATE', {
    description: 'let webhooks reach plain http:// URLs and private, loopback and link-local addresses (local development only)',
    default: false,
  }),
  concurrency: integer('WEBHOOK_CONCURRENCY', { description: 'webhook requests one replica makes at once', default: 64, min: 1, max: 1_000 }),
  endpointConcurrency: integer('WEBHOOK_ENDPOINT_CONCURRENCY', {
    description: 'the most requests one endpoint may have open, all replicas together (a dead endpoint cannot take the others)',
    default: 4,
    min: 1,
    max: 1_000,
  }),
  projectConcurrency: integer('WEBHOOK_PROJECT_CONCURRENCY', {
    description:
      "of those, the most one project's endpoints may hold together, so a project with many slow or dead endpoints cannot hold up the others (below WEBHOOK_CONCURRENCY)",
    default: 16,
    min: 1,
    max: 1_000,
  }),
  timeoutMs: duration('WEBHOOK_TIMEOUT', { description: 'time an endpoint has to answer a webhook request', default: '10s', minMs: 100 }),
  ackWaitMs: duration('WEBHOOK_ACK_WAIT', {
    description: 'time a replica may hold a delivery before it goes to another (must exceed WEBHOOK_TIMEOUT)',
    default: '60s',
    minMs: 1_000,
  }),
  schedule: custom(
    'WEBHOOK_RETRY_SCHEDULE',
    { description: 'delays of the retries after a failed attempt, comma-separated (each with ±10 % jitter)', default: contractSchedule },
    parseSchedule,
  ),
  disableAfterMs: duration('WEBHOOK_DISABLE_AFTER', {
    description: 'an endpoint whose attempts all failed for this long is disabled',
    default: '5d',
    minMs: 1_000,
  }),
};
