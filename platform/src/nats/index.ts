// NATS JetStream: the connection, streams and consumers created from their declarations (proto/src/streams.ts), the
// link's state and readiness, durable consumption, dead letters, and trace context carried in headers.

import { AckPolicy, type ConsumerConfig, type JetStreamManager, RetentionPolicy, StorageType } from '@nats-io/jetstream';
import { type Authenticator, connect, type NatsConnection, nkeyAuthenticator, usernamePasswordAuthenticator } from '@nats-io/transport-node';
import type { StreamDeclaration } from '@notify/proto';
import { ConfigError } from '../config.ts';
import type { Logger } from '../logger.ts';

export type { Msg, NatsConnection } from '@nats-io/transport-node';
export { headers } from '@nats-io/transport-node';

/** Who a service is to the NATS server (natsSettings): a user and password, an NKey seed, or nothing. */
export interface NatsCredentials {
  readonly natsUser: string;
  readonly natsPassword: string;
  readonly natsNkeySeed: string;
}

const noNatsCredentials: NatsCredentials = { natsUser: '', natsPassword: '', natsNkeySeed: '' };

function authenticatorOf(credentials: NatsCredentials): Authenticator | undefined {
  const { natsUser, natsPassword, natsNkeySeed } = credentials;
  if (natsNkeySeed !== '' && (natsUser !== '' || natsPassword !== ''))
    throw new ConfigError(['NATS_NKEY_SEED: give either it or NATS_USER and NATS_PASSWORD, not both']);
  if (natsNkeySeed !== '') return nkeyAuthenticator(new TextEncoder().encode(natsNkeySeed));
  if ((natsUser === '') !== (natsPassword === '')) throw new ConfigError(['NATS_USER and NATS_PASSWORD go together']);
  return natsUser === '' ? undefined : usernamePasswordAuthenticator(natsUser, natsPassword);
}

export async function connectNats(servers: string, name: string, logger: Logger, credentials: NatsCredentials = noNatsCredentials): Promise<NatsConnection> {
  const authenticator = authenticatorOf(credentials);
  const connection = await connect({
    servers: servers.split(','),
    name,
    ...(authenticator ? { authenticator } : {}),
    maxReconnectAttempts: -1,
    reconnectTimeWait: 500,
    // Otherwise every request (each JetStream publish and ack) builds an Error, with its stack, in case it fails.
    noAsyncTraces: true,
  });
  void (async () => {
    for await (const status of connection.status()) {
      if (status.type === 'disconnect' || status.type === 'reconnect' || status.type === 'error') {
        logger.warn({ nats: status.type }, 'NATS connection status changed');
      }
    }
  })();
  return connection;
}

const ns = (ms: number): number => ms * 1_000_000;

/**
 * Creates a stream as proto/src/streams.ts declares it, or updates it to that declaration: safe to run from every
 * replica at every start. `replicas` is the deployment's (NATS_STREAM_REPLICAS).
 */
export async function ensureStream(jsm: JetStreamManager, declaration: StreamDeclaration, replicas: number): Promise<void> {
  const config = {
    name: declaration.name,
    subjects: [...declaration.subjects],
    retention: declaration.retention === 'workqueue' ? RetentionPolicy.Workqueue : RetentionPolicy.Limits,
    storage: StorageType.File,
    num_replicas: replicas,
    ...(declaration.duplicateWindowMs === undefined ? {} : { duplicate_window: ns(declaration.duplicateWindowMs) }),
    ...(declaration.maxAgeMs === undefined ? {} : { max_age: ns(declaration.maxAgeMs) }),
  };
  const exists = await jsm.streams.info(declaration.name).then(
    () => true,
    () => false,
  );
  if (exists) await jsm.streams.update(declaration.name, config);
  else await jsm.streams.add(config);
}

/** Creates a durable pull consumer or updates it in place. */
export async function ensureConsumer(jsm: JetStreamManager, stream: string, config: Partial<ConsumerConfig> & { durable_name: string }): Promise<void> {
  const full = { ack_policy: AckPolicy.Explicit, ...config };
  const exists = await jsm.consumers.info(stream, config.durable_name).then(
    () => true,
    () => false,
  );
  if (exists) await jsm.consumers.update(stream, config.durable_name, full);
  else await jsm.consumers.add(stream, full);
}

export { type JetStreamClient, type JetStreamManager, type JsMsg, jetstream, jetstreamManager } from '@nats-io/jetstream';
export const nanoseconds = ns;
export { deadLetter } from './dead-letters.ts';
export { type DeclareOptions, declareJetStream, isPassingJetStreamFailure } from './declare.ts';
export { consumeDurably, type DurableConsumer, type DurableConsumerOptions } from './durable-consumer.ts';
export { type BucketFollower, followBucket, type KV, type KvEntry, openBucket } from './kv-bucket.ts';
export { type NatsLink, natsReachable, watchNatsLink } from './link.ts';
export { evenShare, presenceExpiryMs, type ReplicaCount, ReplicaPresence } from './replica-presence.ts';
export {
  carriedContext,
  type JetStreamPublisher,
  type MessagingTarget,
  publishTraced,
  startBatchProcessSpan,
  startCreateSpan,
  startProcessSpan,
  startSendSpan,
} from './trace-context.ts';
export { publishMessage, schemaHeaders } from './wire.ts';
