// A service declares its streams, consumers and buckets at start. On a cluster just formed, or electing a leader, the
// JetStream API answers late or not at all for a while (every service of a release creating its replicated streams at
// once): such a start waits and tries again, logging each try, instead of exiting to be restarted.
import { setTimeout as sleep } from 'node:timers/promises';
import { JetStreamApiError } from '@nats-io/jetstream';
import { RequestError, TimeoutError } from '@nats-io/transport-node';
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
}

/**
 * Runs `declare` (idempotent: creates or updates what a service relies on) until it succeeds. A passing failure is
 * tried again until the deadline; any other (a configuration JetStream refuses) fails the start at once.
 */
export async function declareJetStream<T>(what: string, declare: () => Promise<T>, options: DeclareOptions): Promise<T> {
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
