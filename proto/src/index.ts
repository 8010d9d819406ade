// The gRPC contracts: runtime service definitions loaded from the .proto files, and the generated types that bind both sides.
import { fileURLToPath } from 'node:url';
import * as grpc from '@grpc/grpc-js';
import * as protoLoader from '@grpc/proto-loader';
import type { ProtoGrpcType as AuthProto } from './generated/auth.ts';
import type { ProtoGrpcType as DispatchProto } from './generated/dispatch.ts';

/** Options shared with `proto-loader-gen-types` in package.json; the generated types are only right with these. */
const loaderOptions: protoLoader.Options = {
  longs: Number,
  enums: String,
  defaults: true,
  oneofs: true,
  includeDirs: [fileURLToPath(new URL('..', import.meta.url))],
};

function load<T>(file: string): T {
  return grpc.loadPackageDefinition(protoLoader.loadSync(file, loaderOptions)) as unknown as T;
}

export const authProto = load<AuthProto>('auth/v1/auth.proto').notify.auth.v1;
export const dispatchProto = load<DispatchProto>('dispatch/v1/dispatch.proto').notify.dispatch.v1;

export type { AcceptedBody } from './accepted-body.ts';
export type * as auth from './generated/notify/auth/v1/index.ts';
export type * as dispatch from './generated/notify/dispatch/v1/index.ts';
export type * as messaging from './generated/notify/messaging/v1/index.ts';
export { labelCharacters, labelLimits } from './labels.ts';
export type {
  CarriedEvent,
  DeliveryEvent,
  DeliveryJob,
  DeliveryState,
  EventSuppression,
  JobSender,
  KeyTarget,
  Read,
  Requeue,
  TemplateSnapshot,
  WebhookDelivery,
  WireMessage,
} from './messaging.ts';
export {
  deliveryEventId,
  deliveryJobId,
  deliveryStates,
  encodeDeliveryEvent,
  encodeDeliveryEventBatch,
  encodeDeliveryJob,
  encodeKeyAnnouncement,
  encodeWebhookDelivery,
  readDeliveryEvent,
  readDeliveryJob,
  readEventsMessage,
  readKeyAnnouncement,
  readWebhookDelivery,
  schemaHeader,
  webhookDeliveryId,
} from './messaging.ts';
export {
  expandScopes,
  isScope,
  maxKeyFromDomains,
  missingScope,
  type Scope,
  type ScopePreset,
  scopePresets,
  scopes,
  unknownScopeWords,
} from './scopes.ts';
export {
  checkStatsRange,
  parseStatsBound,
  type StatsFault,
  type StatsGranularity,
  type StatsRange,
  statsBucketMs,
  statsGranularities,
  statsMaxBuckets,
} from './stats.ts';
export { duplicateWindowMs, outcomeTtlMs, type StreamDeclaration, streamDeclarations, type Topology, topology } from './streams.ts';
export { erasedEntryPattern, maxSuppressionsAdded, type SuppressionReason, suppressionReasons } from './suppressions.ts';
export {
  maxWebhookUrlLength,
  type WebhookEventType,
  type WebhookUrlRefusal,
  webhookEventTypes,
  webhookTestEventType,
  webhookUrlRefusal,
} from './webhooks.ts';
