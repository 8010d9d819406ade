// dispatch-svc's environment (README's table is written from these declarations); common variables come from the platform.
import { duration, integer, oneOf, secret, text, url } from '@notify/platform';
import { dispatchTestFaults } from './outbox/test-fault.ts';

export const configSpec = {
  grpcPort: integer('GRPC_PORT', { description: 'port of the gRPC server (DispatchService, TemplateAdminService, health)', default: 50052, min: 0, max: 65535 }),
  databaseUrl: url('DATABASE_URL', { description: 'PostgreSQL holding templates, messages, idempotency records and the outbox', default: 'postgres://postgres@127.0.0.1:5432/notify', protocols: ['postgres', 'postgresql'], secret: true }),
  databasePoolSize: integer('DATABASE_POOL_SIZE', { description: 'connections in the database pool', default: 10, min: 1, max: 200 }),
  natsUrl: text('NATS_URL', { description: 'NATS servers, comma-separated', default: 'nats://127.0.0.1:4222' }),
  natsPrefix: text('NOTIFY_NATS_PREFIX', { description: 'prefix of stream, subject and consumer names (empty in production)', default: '', pattern: /^[A-Za-z0-9_-]*$/ }),
  natsStreamReplicas: integer('NATS_STREAM_REPLICAS', { description: 'replicas of the JetStream streams (3 on a NATS cluster)', default: 1, min: 1, max: 5 }),
  internalToken: secret('INTERNAL_TOKEN', { description: 'token the gateway presents to DispatchService' }),
  adminToken: secret('ADMIN_TOKEN', { description: 'token notifyctl presents to TemplateAdminService' }),
  idempotencyTtlMs: duration('NOTIFY_IDEMPOTENCY_TTL', { description: 'how long an Idempotency-Key replays its first response', default: '24h', minMs: 1_000 }),
  outboxRelayIntervalMs: duration('OUTBOX_RELAY_INTERVAL', { description: 'pause between two passes of the outbox relay', default: '1s', minMs: 50 }),
  outboxRelayMinAgeMs: duration('OUTBOX_RELAY_MIN_AGE', { description: 'age an outbox row reaches before the relay republishes it (the send path publishes it first)', default: '5s', minMs: 0 }),
  nodeEnv: text('NODE_ENV', { description: 'deployment kind; only `test` allows NOTIFY_TEST_FAULT', default: 'production' }),
  testFault: oneOf('NOTIFY_TEST_FAULT', dispatchTestFaults, { description: 'TEST ONLY, refused unless NODE_ENV=test: kill the process after a send commits (`exit-after-commit`) or after its job is published (`exit-after-publish`)', default: 'none' }),
};
