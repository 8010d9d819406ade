// NATS JetStream: connection, the names of streams, subjects and consumers (one prefix isolates a test run), and their creation.
import { connect, type NatsConnection } from '@nats-io/transport-node';
import { AckPolicy, jetstreamManager, RetentionPolicy, StorageType, type ConsumerConfig, type JetStreamManager } from '@nats-io/jetstream';
import type { Logger } from '../logger.ts';

export type { NatsConnection } from '@nats-io/transport-node';

export interface Topology {
  readonly jobsStream: string;
  readonly jobsSubject: string;
  readonly eventsStream: string;
  /** Subject of one message's delivery events; the stream captures `<prefix>notify.events.>`. */
  eventsSubject(messageId: number): string;
  readonly mailerConsumer: string;
  readonly eventsConsumer: string;
  /** Core NATS subject on which auth-svc replicas announce revoked keys. */
  readonly keyInvalidationSubject: string;
}

/** `prefix` is empty in production; tests pass a run-unique one such as `t1f3a_`. */
export function topology(prefix: string): Topology {
  const subjectPrefix = prefix.toLowerCase().replace(/[^a-z0-9_-]/g, '_');
  return {
    jobsStream: `${prefix.toUpperCase()}NOTIFY_JOBS`,
    jobsSubject: `${subjectPrefix}notify.jobs.email`,
    eventsStream: `${prefix.toUpperCase()}NOTIFY_EVENTS`,
    eventsSubject: (messageId) => `${subjectPrefix}notify.events.${messageId}`,
    mailerConsumer: `${prefix.toUpperCase()}mailer`,
    eventsConsumer: `${prefix.toUpperCase()}dispatch-events`,
    keyInvalidationSubject: `${subjectPrefix}notify.auth.key-revoked`,
  };
}

export async function connectNats(servers: string, name: string, logger: Logger): Promise<NatsConnection> {
  const connection = await connect({
    servers: servers.split(','),
    name,
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

export interface StreamOptions {
  replicas: number;
  /** JetStream drops a second publish with the same Nats-Msg-Id within this window. */
  duplicateWindowMs: number;
}

const ns = (ms: number): number => ms * 1_000_000;

/** Creates both streams, or updates them to this configuration; safe to run from every replica at every start. */
export async function ensureStreams(jsm: JetStreamManager, names: Topology, options: StreamOptions): Promise<void> {
  const streams = [
    { name: names.jobsStream, subjects: [names.jobsSubject] },
    { name: names.eventsStream, subjects: [names.eventsSubject(0).replace(/0$/, '>')] },
  ];
  for (const stream of streams) {
    const config = {
      ...stream,
      retention: RetentionPolicy.Workqueue,
      storage: StorageType.File,
      num_replicas: options.replicas,
      duplicate_window: ns(options.duplicateWindowMs),
    };
    const exists = await jsm.streams.info(stream.name).then(() => true, () => false);
    if (exists) await jsm.streams.update(stream.name, config);
    else await jsm.streams.add(config);
  }
}

/** Creates a durable pull consumer or updates it in place. */
export async function ensureConsumer(jsm: JetStreamManager, stream: string, config: Partial<ConsumerConfig> & { durable_name: string }): Promise<void> {
  const full = { ack_policy: AckPolicy.Explicit, ...config };
  const exists = await jsm.consumers.info(stream, config.durable_name).then(() => true, () => false);
  if (exists) await jsm.consumers.update(stream, config.durable_name, full);
  else await jsm.consumers.add(stream, full);
}

export { jetstream, jetstreamManager, type JetStreamClient, type JetStreamManager, type JsMsg } from '@nats-io/jetstream';
export const nanoseconds = ns;
export { carriedContext, publishTraced, startBatchProcessSpan, startCreateSpan, startProcessSpan, startSendSpan, traceHeaders, type MessagingTarget } from './trace-context.ts';
