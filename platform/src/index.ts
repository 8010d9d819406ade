// The shared runtime every service starts from. Database and NATS helpers are separate entry points
// (`@notify/platform/database`, `@notify/platform/nats`) so a service loads only the clients it uses.
export { adminTokenSetting, boolean, ConfigError, custom, databaseSettings, duration, integer, bounceTokenSetting, gatewayTokenSetting, mailerTokenSetting, jetStreamSettings, natsSettings, parseDuration, loadConfig, oneOf, secret, testFaultSettings, text, url, type ConfigOf, type Field } from './config.ts';
export { OperationalError, UserError, errorMetadataKeys } from './errors.ts';
export { createLogger, redactedPaths, type Logger } from './logger.ts';
export { Lifecycle, ShutdownPriority } from './lifecycle.ts';
export { Counter, Gauge, Histogram, checkReadiness, createRegistry, degradable, startOpsServer, type OpsServer, type Readiness, type ReadinessCheck, type ReadinessState, type Registry } from './metrics.ts';
export { commonConfig, runService, type ServiceContext } from './service.ts';
export { Batcher, fulfilled, type BatcherOptions } from './batcher.ts';
export { listenOn } from './listen.ts';
export { runPeriodically, type PeriodicTask } from './periodic.ts';
export { ExpiringCache, type CacheTicket } from './expiring-cache.ts';
export { GrpcServer, grpcMessageLimitBytes, type Access, type AsyncHandlers, type Caller } from './grpc/server.ts';
export { channelCredentials, grpcClientTlsSettings, grpcServerTlsSettings, serverCredentials } from './grpc/tls.ts';
export { GrpcClient, channelOptions, type GrpcClientOptions } from './grpc/client.ts';
export { RemoteError, toGrpcFailure, type Refusal } from './grpc/errors.ts';
export {
  BatchedCalls,
  checkItemCount,
  contextOfItem,
  endItemSpan,
  itemRefusal,
  itemServer,
  itemTraceContext,
  remoteErrorOf,
  startItemSpan,
  type BatchedCallsOptions,
  type CarriedItem,
  type ItemOutcome,
  type ItemTraceContext,
  type RecordItem,
} from './grpc/batched-calls.ts';
export { activeContext, annotateRequestSpan, contextFromTraceparent, inSpan, withActiveSpan, linkTo, notifyAttributes, recordFailure, SpanKind, SpanStatusCode, startSpan, traceIdOf, tracedRequests, traceparentOf, type Attributes, type Context, type Link, type Span, type SpanStart } from './tracing.ts';
export { parseRate, type Rate } from './rate.ts';
export { formatRetention, parseRetention } from './retention.ts';
