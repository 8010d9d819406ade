// A service declares its streams, consumers and buckets at start. On a cluster just formed, or electing a leader, the
// JetStream API answers late or not at all for a while (every service of a release creating its replicated streams at
// once): such a start waits and tries again, logging each try, instead of exiting to be restarted. A NATS server that
// comes back without its store (a pod's emptied volume, a node replaced by a new one) has none of them: consumers
// would wait for messages that never come, and every publish would find no stream. So the declarations are made again
// each time the connection comes back (`redeclareOn`).
import { setTimeout as sleep } from 'node:timers/promises';
import { JetStreamApiError } from '@nats-io/jetstream';
import { type NatsConnection, RequestError, TimeoutError } from '@nats-io/transport-node';
import type { Logger } from '../logger.ts';

/** A JetStream API failure that passes once the cluster has a leader: no answer in time, no responder yet, or 503. */
export function isPassingJetStreamFailure(error: unknown): boolean {
  if (error instanceof TimeoutError) return true;
  if (error instanceof RequestError) return error.isNoResponders();
  return error instanceof JetStreamApiError && error.status === 503;
}

export interface DeclareOptions {
  readonly logger: Logger;
  /** How long to keep trying before the start fails (default 120 s: several leader elections). */
  readonly deadlineMs?: number;
  /** Pause between tries (default 1 s). */
  readonly pauseMs?: number;
  /** Made again, the same way, each time this connection reconnects, until it is closed. */
  readonly redeclareOn?: NatsConnection;
}

/**
 * Runs `declare` (idempotent: creates or updates what a service relies on) until it succeeds. A passing failure is
 * tried again until the deadline; any other (a configuration JetStream refuses) fails the start at once.
 */
export async function declareJetStream<T>(what: string, declare: () => Promise<T>, options: DeclareOptions): Promise<T> {
  const declared = await declareUntilDeadline(what, declare, options);
  if (options.redeclareOn) void redeclareOnReconnect(options.redeclareOn, what, declare, options);
  return declared;
}

async function redeclareOnReconnect(connection: NatsConnection, what: string, declare: () => Promise<unknown>, options: DeclareOptions): Promise<void> {
  for await (const status of connection.status()) {
    if (status.type !== 'reconnect') continue;
    await declareUntilDeadline(what, declare, options).then(
      () => options.logger.info({ what }, 'JetStream declarations made again after NATS reconnected'),
      (error: unknown) => options.logger.error({ err: error, what }, 'JetStream declarations not made again after NATS reconnected'),
    );
  }
}

async function declareUntilDeadline<T>(what: string, declare: () => Promise<T>, options: DeclareOptions): Promise<T> {
  const deadline = Date.now() + (options.deadlineMs ?? 120_000);
  for (let attempt = 1; ; attempt++) {
    try {
      return await declare();
    } catch (error) {
      if (!isPassingJetStreamFailure(error) || Date.now() >= deadline) throw error;
      options.logger.warn({ err: error, attempt, what }, 'JetStream did not answer a declaration; trying again');
      await sleep(options.pauseMs ?? 1_000);
    }
  }
}
