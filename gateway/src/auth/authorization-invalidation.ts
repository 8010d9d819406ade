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

export class InvalidationListener {
  readonly #options: InvalidationListenerOptions;
  readonly #target: InvalidationTarget;
  #closed = false;
  #live = false;
  #connection: NatsConnection | undefined;
  /** Bumped whenever the subscription stops being trustworthy, so that a confirmation asked for before it is void. */
  #epoch = 0;
  readonly #retry = new AbortController();

  /** Connects in the background (retrying while NATS cannot be reached) and follows the announcements from then on. */
  static listen(options: InvalidationListenerOptions): InvalidationListener {
    const listener = new InvalidationListener(options);
    void connectPatiently(options.natsUrl, options.natsCredentials, options.retryMs ?? 5_000, options.logger, listener.#retry.signal).then((nats) => {
      if (!nats) return;
      if (listener.#closed) return void nats.close();
      listener.#connection = nats;
      listener.#follow(nats);
    });
    return listener;
  }

  private constructor(options: InvalidationListenerOptions) {
    this.#options = options;
    this.#target = allOf(options.targets);
  }

  /** Whether the subscription is confirmed live now (the cache is in use). */
  get live(): boolean {
    return this.#live;
  }

  /** Stops listening and closes the connection; the cache is paused. */
  async close(): Promise<void> {
    this.#closed = true;
    this.#pause();
    this.#retry.abort();
    // close, not drain: nothing of ours is pending, and a drain would wait on a server that may be gone.
    if (this.#connection && !this.#connection.isClosed()) await this.#connection.close();
  }

  #pause(): void {
    this.#epoch += 1;
    this.#live = false;
    this.#target.pause();
  }

  #follow(nats: NatsConnection): void {
    const { subject, logger, received } = this.#options;
    const subscription = nats.subscribe(subject, {
      callback: (error, message) => {
        if (!error) {
          apply(message, this.#target, received);
          return;
        }
        // Whatever went wrong, announcements may be missed from here on.
        logger.warn({ err: error }, 'key invalidation subscription failed: authorizations are not cached until NATS reconnects');
        received.inc({ scope: 'all' });
        this.#pause();
      },
    });
    void subscription.closed.then(() => {
      if (this.#closed) return;
      logger.warn({ subject }, 'key invalidation subscription closed: authorizations are no longer cached');
      this.#pause();
    });
    void this.#followStatus(nats);
    this.#goLiveAfterFlush(nats);
  }

  async #followStatus(nats: NatsConnection): Promise<void> {
    for await (const status of nats.status()) {
      if (this.#closed) break;
      if (status.type === 'disconnect') {
        // Announcements published while we are away are lost to us: nothing cached may be trusted, nor cached anew.
        this.#options.received.inc({ scope: 'all' });
        this.#pause();
        this.#options.logger.info('NATS disconnected: authorizations are not cached until it reconnects');
      } else if (status.type === 'reconnect') {
        this.#goLiveAfterFlush(nats);
      }
    }
  }

  // A round trip to the server after (re)subscribing: once it answers, the server has the subscription, and every
  // announcement from then on reaches us.
  #goLiveAfterFlush(nats: NatsConnection): void {
    const asked = this.#epoch;
    const { subject, logger } = this.#options;
    nats.flush().then(
      () => {
        if (this.#closed || asked !== this.#epoch) return;
        this.#live = true;
        this.#target.resume();
        logger.info({ subject }, 'key invalidations subscribed: accepted API keys are cached');
      },
      (error: unknown) => {
        if (!this.#closed)
          logger.warn({ err: error }, 'NATS did not confirm the key invalidation subscription: authorizations stay uncached until it reconnects');
      },
    );
  }
}

/** One target driving all of them. */
function allOf(targets: readonly InvalidationTarget[]): InvalidationTarget {
  return {
    invalidatePrefix: (prefix) => {
      for (const each of targets) each.invalidatePrefix(prefix);
    },
    invalidateAll: () => {
      for (const each of targets) each.invalidateAll();
    },
    pause: () => {
      for (const each of targets) each.pause();
    },
    resume: () => {
      for (const each of targets) each.resume();
    },
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
async function connectPatiently(
  natsUrl: string,
  credentials: NatsCredentials | undefined,
  retryMs: number,
  logger: Logger,
  stop: AbortSignal,
): Promise<NatsConnection | undefined> {
  for (let attempt = 1; !stop.aborted; attempt += 1) {
    try {
      return await connectNats(natsUrl, 'gateway', logger, credentials);
    } catch (error) {
      if (stop.aborted) return undefined;
      // Said once at warn: the gateway works without NATS, only slower; later failures are the same story.
      logger[attempt === 1 ? 'warn' : 'debug'](
        { err: error, retryInMs: retryMs },
        'NATS unreachable: authorizations are not cached (every send asks auth-svc) until it answers',
      );
      await sleep(retryMs, undefined, { signal: stop, ref: false }).catch(() => undefined);
    }
  }
  return undefined;
}
