// JetStream publishes that wait for the stream's acknowledgement, as `js.publish` does, with the acknowledgements of
// every publish received on one inbox subscription of the connection and matched by their reply subject. nats.js makes
// each `js.publish` a request of its own: a timer, an entry in its request table and, once the reply has settled it,
// an Error with its stack built to cancel it. With a publish per accepted send in dispatch-svc and two per delivered
// mail in the mailer, that cost the client twice the CPU per publish of this (docs/benchmark.md, "JetStream
// publishes acknowledged on one subscription"). What a publish means is unchanged: it resolves once the stream has
// stored the message (or recognised its Nats-Msg-Id as a duplicate) and rejects if it did not say so in time.
import { setTimeout as sleep } from 'node:timers/promises';
import { createInbox, headers as natsHeaders, type Msg, type MsgHdrs, type NatsConnection, type Subscription } from '@nats-io/transport-node';
import { JetStreamApiError, type ApiError, type PubAck } from '@nats-io/jetstream';

export interface AckedPublishOptions {
  /** Nats-Msg-Id: the stream keeps one message per id within its duplicate window. */
  readonly msgID: string;
  readonly headers?: MsgHdrs;
  /** How long to wait for the acknowledgement, per try (5 s by default, as `js.publish`). */
  readonly timeout?: number;
  /** Tries in all when the acknowledgement times out or no stream answers (a leader being elected); 1 by default. */
  readonly retries?: number;
}

/** What publishes to JetStream and waits for its acknowledgement: this module's publisher, or a JetStreamClient. */
export interface JetStreamPublisher {
  publish(subject: string, payload: Uint8Array, options: AckedPublishOptions): Promise<PubAck>;
}

export interface AckedPublisher extends JetStreamPublisher {
  /** Rejects the publishes still waiting and ends the subscription. */
  close(): void;
}

/** The acknowledgement did not come in time: the message may or may not be stored. */
export class PublishTimeoutError extends Error {
  override readonly name = 'PublishTimeoutError';
}

/** No stream listens on the subject (none exists, or its leader is being elected). */
export class NoStreamError extends Error {
  override readonly name = 'NoStreamError';
}

const defaultTimeoutMs = 5_000;
/** Pause before a publish is tried again: as short as a leader's election can be, growing with each try. */
const retryPauseMs = 250;
/** How often waiting publishes are checked against their deadlines while any wait. */
const deadlineSweepMs = 50;
/** NATS's status for a request nobody subscribes to (the connection asks for it: nats.js sets no_responders). */
const noRespondersStatus = 503;

interface Waiting {
  readonly resolve: (ack: PubAck) => void;
  readonly reject: (error: Error) => void;
  readonly deadline: number;
}

function acknowledgement(msg: Msg): PubAck | Error {
  if (msg.headers?.code === noRespondersStatus) return new NoStreamError(`no stream answered on ${msg.subject}`);
  let body: Partial<PubAck> & { error?: ApiError };
  try {
    body = JSON.parse(msg.string()) as Partial<PubAck> & { error?: ApiError };
  } catch {
    return new Error('unreadable JetStream acknowledgement');
  }
  if (body.error) return new JetStreamApiError(body.error);
  if (typeof body.stream !== 'string' || body.stream === '' || typeof body.seq !== 'number') return new Error('invalid JetStream acknowledgement');
  return { ...body, duplicate: body.duplicate === true } as PubAck;
}

export function createAckedPublisher(nc: NatsConnection): AckedPublisher {
  const inbox = createInbox();
  const waiting = new Map<number, Waiting>();
  let lastToken = 0;
  let sweep: NodeJS.Timeout | undefined;

  const settle = (token: number, outcome: PubAck | Error): void => {
    const entry = waiting.get(token);
    if (!entry) return; // timed out already, or an acknowledgement sent twice
    waiting.delete(token);
    if (outcome instanceof Error) entry.reject(outcome);
    else entry.resolve(outcome);
    if (waiting.size === 0 && sweep) {
      clearInterval(sweep);
      sweep = undefined;
    }
  };
  const subscription: Subscription = nc.subscribe(`${inbox}.*`, {
    callback: (error, msg) => {
      if (error) return;
      settle(Number(msg.subject.slice(inbox.length + 1)), acknowledgement(msg));
    },
  });
  const rejectWaiting = (reason: string): void => {
    for (const token of [...waiting.keys()]) settle(token, new Error(reason));
  };
  // Closed with its connection (or by close()): no acknowledgement can come any more.
  void subscription.closed.then(() => rejectWaiting('the NATS connection is closed'));
  const expire = (): void => {
    const now = Date.now();
    for (const [token, entry] of waiting) {
      if (entry.deadline <= now) settle(token, new PublishTimeoutError('JetStream did not acknowledge the publish in time'));
    }
  };

  const publishOnce = (subject: string, payload: Uint8Array, headers: MsgHdrs, timeoutMs: number): Promise<PubAck> =>
    new Promise<PubAck>((resolve, reject) => {
      if (nc.isClosed()) {
        reject(new Error('the NATS connection is closed'));
        return;
      }
      lastToken += 1;
      const token = lastToken;
      waiting.set(token, { resolve, reject, deadline: Date.now() + timeoutMs });
      sweep ??= setInterval(expire, deadlineSweepMs);
      try {
        nc.publish(subject, payload, { reply: `${inbox}.${token}`, headers });
      } catch (error) {
        settle(token, error instanceof Error ? error : new Error(String(error)));
      }
    });

  return {
    async publish(subject, payload, options) {
      const headers = options.headers ?? natsHeaders();
      headers.set('Nats-Msg-Id', options.msgID);
      const tries = Math.max(1, options.retries ?? 1);
      for (let tried = 1; ; tried += 1) {
        try {
          return await publishOnce(subject, payload, headers, options.timeout ?? defaultTimeoutMs);
        } catch (error) {
          const retriable = error instanceof PublishTimeoutError || error instanceof NoStreamError;
          if (!retriable || tried >= tries) throw error;
          await sleep(retryPauseMs * tried);
        }
      }
    },
    close() {
      subscription.unsubscribe();
      rejectWaiting('the publisher was closed');
    },
  };
}
