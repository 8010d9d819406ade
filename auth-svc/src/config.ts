// auth-svc's environment. Defaults suit the local machine; INTERNAL_TOKEN and ADMIN_TOKEN have none on purpose.
import { duration, integer, secret, text, url } from '@notify/platform';

export const configSpec = {
  grpcPort: integer('GRPC_PORT', { description: 'port of the gRPC server (AuthService, AuthAdminService, health)', default: 50051, min: 0, max: 65535 }),
  databaseUrl: url('DATABASE_URL', {
    description: 'PostgreSQL holding plans, organizations, projects and api_keys',
    default: 'postgres://postgres@127.0.0.1:5432/notify',
    protocols: ['postgres', 'postgresql'],
    secret: true,
  }),
  databasePoolSize: integer('DATABASE_POOL_SIZE', { description: 'database connections per replica', default: 10, min: 1, max: 1000 }),
  natsUrl: text('NATS_URL', { description: 'NATS servers, comma-separated (key invalidation between replicas)', default: 'nats://127.0.0.1:4222' }),
  natsPrefix: text('NOTIFY_NATS_PREFIX', {
    description: 'prefix of NATS subjects, empty in production; isolates test runs',
    default: '',
    pattern: /^[A-Za-z0-9_-]*$/,
  }),
  internalToken: secret('INTERNAL_TOKEN', { description: 'bearer token the gateway presents to AuthService' }),
  adminToken: secret('ADMIN_TOKEN', { description: 'bearer token notifyctl presents to AuthAdminService' }),
  cacheTtlMs: duration('AUTH_CACHE_TTL', {
    description: 'how long a key lookup (found or not) is reused; revocations and plan changes are pushed sooner',
    default: '10s',
  }),
};
