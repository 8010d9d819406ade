// Keeps the authorization cache and the key directory honest: the gateway listens on the core NATS subject auth-svc
// publishes a KeyAnnouncement on when it creates or revokes a key (its prefix) or changes a plan (every key); the cache drops
// what it holds at once, and the directory learns the prefix (key-directory.ts). Core pub/sub
// is fire-and-forget, so the cache is only used while the subscription is known to be live: not before the server has
// confirmed it, not while the connection is down (an announcement then would be lost to us), and after a reconnect only
// once the subscription is registered again, starting from nothing. NATS is never required: unreachable at start, it
// is retried in the background and every send asks auth-svc meanwhile, exactly as without a cache.
import { setTimeout as sleep } from 'node:timers/promises';
import type { Counter, Logger } from '@notify/platform';
import { connectNats, type Msg, type NatsConnection, type NatsCredentials } from '@notify/platform/nats';
import { readKeyAnnouncement, schemaHeader } from '@notify/proto';

/** What the listener drives: the cached authorizer. */
export interface InvalidationTarget {
  invalidatePrefix(prefix: string): void;
  invalidateAll(): void;
  pause(): void;
  resume(): void;
}

export interface InvalidationListenerOptions {
  /** NATS_URL. */
  readonly natsUrl: string;
  /** NATS_USER/NATS_PASSWORD or NATS_NKEY_SEED; none when the server asks for none. */
  readonly natsCredentials?: NatsCredentials;
  /** `topology(NOTIFY_NATS_PREFIX).keyInvalidationSubject`, the subject auth-svc publishes on. */
  readonly subject: string;
  /** What announcements drive: the key directory, and the cached authorizer when there is one. */
  readonly targets: readonly InvalidationTarget[];
  readonly logger: Logger;
  /** notify_gateway_auth_cache_invalidations_total{scope}. */
  readonly received: Counter<'scope'>;
  /** Wait between attempts while NATS cannot be reached at start (default 5 s). */
  readonly retryMs?: number;
}

export interface InvalidationListener {
  /** Whether the subscription is confirmed live now (the cache is in use). */
  readonly live: boolean;
  /** Stops listening and closes the connection; the cache is paused. */
  close(): Promise<void>;
}

export function listenForInvalidations(options: InvalidationListenerOptions): InvalidationListener {
  const { natsUrl, subject, logger, received } = options;
  const target = allOf(options.targets);
  let closed = false;
  let live = false;
  let connection: NatsConnection | undefined;
  /** Bumped whenever the subscription stops being trustworthy, so that a confirmation asked for before it is void. */
  let epoch = 0;
  const retry = new AbortController();

  const pause = (): void => {
    epoch += 1;
    live = false;
    target.pause();
  };

  // A round trip to the server after (re)subscribing: once it answers, the server has the subscription, and every
  // announcement from then on reaches us.
  const goLiveAfterFlush = (nats: NatsConnection): void => {
    const asked = epoch;
    nats.flush().then(
      () => {
        if (closed || asked !== epoch) return;
        live = true;
        target.resume();
        logger.info({ subject }, 'key invalidations subscribed: accepted API keys are cached');
      },
      (error: unknown) => {
        if (!closed) logger.warn({ err: error }, 'NATS did not confirm the key invalidation subscription: authorizations stay uncached until it reconnects');
      },
    );
  };

  const follow = (nats: NatsConnection): void => {
    const subscription = nats.subscribe(subject, {
      callback: (error, message) => {
        if (!error) {
          apply(message, target, received);
          return;
        }
        // Whatever went wrong, announcements may be missed from here on.
        logger.warn({ err: error }, 'key invalidation subscription failed: authorizations are not cached until NATS reconnects');
        received.inc({ scope: 'all' });
        pause();
      },
    });
    void subscription.closed.then(() => {
      if (closed) return;
      logger.warn({ subject }, 'key invalidation subscription closed: authorizations are no longer cached');
      pause();
    });
    void (async () => {
      for await (const status of nats.status()) {
        if (closed) break;
        if (status.type === 'disconnect') {
          // Announcements published while we are away are lost to us: nothing cached may be trusted, nor cached anew.
          received.inc({ scope: 'all' });
          pause();
          logger.info('NATS disconnected: authorizations are not cached until it reconnects');
        } else if (status.type === 'reconnect') {
          goLiveAfterFlush(nats);
        }
      }
    })();
    goLiveAfterFlush(nats);
  };

  void connectPatiently(natsUrl, options.natsCredentials, options.retryMs ?? 5_000, logger, retry.signal).then((nats) => {
    if (!nats) return;
    if (closed) return void nats.close();
    connection = nats;
    follow(nats);
  });

  return {
    get live() {
      return live;
    },
    async close() {
      closed = true;
      pause();
      retry.abort();
      // close, not drain: nothing of ours is pending, and a drain would wait on a server that may be gone.
      if (connection && !connection.isClosed()) await connection.close();
    },
  };
}

/** One target driving all of them. */
function allOf(targets: readonly InvalidationTarget[]): InvalidationTarget {
  return {
    invalidatePrefix: (prefix) => targets.forEach((each) => each.invalidatePrefix(prefix)),
    invalidateAll: () => targets.forEach((each) => each.invalidateAll()),
    pause: () => targets.forEach((each) => each.pause()),
    resume: () => targets.forEach((each) => each.resume()),
  };
}

/** Applies one announcement; one that cannot be read (another release's) drops everything, which is always safe. */
function apply(message: Msg, target: InvalidationTarget, received: Counter<'scope'>): void {
  const announced = readKeyAnnouncement(message.data, message.headers?.get(schemaHeader) || undefined);
  if (announced !== undefined && 'keyPrefix' in announced) {
    received.inc({ scope: 'key' });
    target.invalidatePrefix(announced.keyPrefix);
  } else {
    received.inc({ scope: 'all' });
    target.invalidateAll();
  }
}

/** Connects, retrying every `retryMs` while NATS cannot be reached; undefined once `stop` is aborted. */
async function connectPatiently(natsUrl: string, credentials: NatsCredentials | undefined, retryMs: number, logger: Logger, stop: AbortSignal): Promise<NatsConnection | undefined> {
  for (let attempt = 1; !stop.aborted; attempt += 1) {
    try {
      return await connectNats(natsUrl, 'gateway', logger, credentials);
    } catch (error) {
      if (stop.aborted) return undefined;
      // Said once at warn: the gateway works without NATS, only slower; later failures are the same story.
      logger[attempt === 1 ? 'warn' : 'debug']({ err: error, retryInMs: retryMs }, 'NATS unreachable: authorizations are not cached (every send asks auth-svc) until it answers');
      await sleep(retryMs, undefined, { signal: stop, ref: false }).catch(() => undefined);
    }
  }
  return undefined;
}
