// auth-svc's environment. Defaults suit the local machine; GATEWAY_TOKEN and ADMIN_TOKEN have none on purpose.
// The database, NATS and token settings are the platform's shared groups. docs/settings.md's table is generated from
// these declarations.
import { adminTokenSetting, databaseSettings, duration, gatewayTokenSetting, grpcServerTlsSettings, integer, natsSettings } from '@notify/platform';

export const configSpec = {
  grpcPort: integer('GRPC_PORT', { description: 'port of the gRPC server (AuthService, AuthAdminService, health)', default: 50051, min: 0, max: 65535 }),
  ...databaseSettings({ maxPoolSize: 1000 }),
  ...natsSettings,
  ...gatewayTokenSetting,
  ...grpcServerTlsSettings,
  ...adminTokenSetting,
  cacheTtlMs: duration('AUTH_CACHE_TTL', {
    description: 'how long a key lookup (found or not) is reused; revocations and plan changes are pushed sooner',
    default: '10s',
  }),
};
