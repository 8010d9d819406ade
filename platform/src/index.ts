// The shared runtime every service starts from. Database and NATS helpers are separate entry points
// (`@notify/platform/database`, `@notify/platform/nats`) so a service loads only the clients it uses.

export { Batcher, type BatcherOptions, fulfilled } from './batcher.ts';
export {
  adminTokenSetting,
  boolean,
  bounceTokenSetting,
  ConfigError,
  type ConfigOf,
  custom,
  databaseSettings,
  duration,
  type Field,
  gatewayTokenSetting,
  integer,
  jetStreamSettings,
  loadConfig,
  mailerTokenSetting,
  natsSettings,
  oneOf,
  parseDuration,
  secret,
  testFaultSettings,
  text,
  url,
} from './config.ts';
export { errorMetadataKeys, OperationalError, UserError } from './errors.ts';
export { type CacheTicket, ExpiringCache } from './expiring-cache.ts';
export {
  BatchedCalls,
  type BatchedCallsOptions,
  type CarriedItem,
  checkItemCount,
  contextOfItem,
  endItemSpan,
  type ItemOutcome,
  type ItemTraceContext,
  itemRefusal,
  itemServer,
  itemTraceContext,
  type RecordItem,
  remoteErrorOf,
  startItemSpan,
} from './grpc/batched-calls.ts';
export { channelOptions, GrpcClient, type GrpcClientOptions } from './grpc/client.ts';
export { type Refusal, RemoteError, toGrpcFailure } from './grpc/errors.ts';
export { type Access, type AsyncHandlers, type Caller, GrpcServer, grpcMessageLimitBytes } from './grpc/server.ts';
export { channelCredentials, grpcClientTlsSettings, grpcServerTlsSettings, serverCredentials } from './grpc/tls.ts';
export { Lifecycle, ShutdownPriority } from './lifecycle.ts';
export { listenOn } from './listen.ts';
export { createLogger, type Logger, redactedPaths } from './logger.ts';
export {
  Counter,
  checkReadiness,
  createRegistry,
  degradable,
  Gauge,
  Histogram,
  type OpsServer,
  type Readiness,
  type ReadinessCheck,
  type ReadinessState,
  type Registry,
  startOpsServer,
} from './metrics.ts';
export { type PeriodicTask, runPeriodically } from './periodic.ts';
export { parseRate, type Rate } from './rate.ts';
export { formatRetention, parseRetention } from './retention.ts';
export { commonConfig, runService, type ServiceContext } from './service.ts';
export {
  type Attributes,
  activeContext,
  annotateRequestSpan,
  type Context,
  contextFromTraceparent,
  inSpan,
  type Link,
  linkTo,
  notifyAttributes,
  recordFailure,
  type Span,
  SpanKind,
  type SpanStart,
  SpanStatusCode,
  startSpan,
  tracedRequests,
  traceIdOf,
  traceparentOf,
  withActiveSpan,
} from './tracing.ts';
