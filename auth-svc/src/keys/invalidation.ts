// Cache invalidation across replicas over core NATS: the replica that revokes a key (or changes a plan) publishes,
// every replica (itself included) drops the entry. Core pub/sub is fire-and-forget: if a message is lost, the entry
// still expires after AUTH_CACHE_TTL, and a replica that was disconnected clears its whole cache when it reconnects.
import type { Counter, Logger } from '@notify/platform';
import { type NatsConnection, publishMessage } from '@notify/platform/nats';
import { encodeKeyAnnouncement, type KeyTarget, readKeyAnnouncement, schemaHeader } from '@notify/proto';
import type { KeyResolver } from './key-resolver.ts';

const publishTimeoutMs = 1_000;

export interface InvalidationChannel {
  /** Forgets `prefix` here at once, then tells every replica to forget it. */
  invalidateKey(prefix: string): Promise<void>;
  /** Forgets every key here at once, then tells every replica to do the same. */
  invalidateAll(): Promise<void>;
  /** Stops listening (the connection itself belongs to the caller). */
  close(): Promise<void>;
}

/** Subscribes this replica's resolver to invalidations; resolves once the server has registered the subscription. */
export async function openInvalidationChannel(options: {
  nats: NatsConnection;
  subject: string;
  resolver: KeyResolver;
  logger: Logger;
  received: Counter<'scope'>;
}): Promise<InvalidationChannel> {
  const { nats, subject, resolver, logger, received } = options;
  let closed = false;

  const subscription = nats.subscribe(subject, {
    callback: (error, message) => {
      if (error) {
        logger.warn({ err: error }, 'key invalidation subscription failed');
        return;
      }
      // One that cannot be read (another release's) empties the whole cache: always safe.
      const target = readKeyAnnouncement(message.data, message.headers?.get(schemaHeader) || undefined);
      if (target !== undefined && 'keyPrefix' in target) {
        received.inc({ scope: 'key' });
        resolver.invalidate(target.keyPrefix);
      } else {
        received.inc({ scope: 'all' });
        resolver.invalidateAll();
      }
    },
  });
  void (async () => {
    for await (const status of nats.status()) {
      if (closed) break;
      if (status.type === 'reconnect') {
        // Invalidations published while we were away are lost to us: start from the database again.
        received.inc({ scope: 'all' });
        resolver.invalidateAll();
      }
    }
  })();
  await nats.flush();

  const announce = async (target: KeyTarget): Promise<void> => {
    let timer: NodeJS.Timeout | undefined;
    try {
      publishMessage(nats, subject, encodeKeyAnnouncement(target));
      await Promise.race([
        nats.flush(),
        new Promise<never>((_, reject) => {
          timer = setTimeout(() => reject(new Error(`NATS did not confirm within ${publishTimeoutMs} ms`)), publishTimeoutMs);
        }),
      ]);
    } catch (error) {
      // The database change stands; other replicas converge when their entry expires.
      logger.warn({ err: error, target }, 'key invalidation not confirmed by NATS; other replicas rely on cache expiry');
    } finally {
      clearTimeout(timer);
    }
  };

  return {
    invalidateKey(prefix) {
      resolver.invalidate(prefix);
      return announce({ keyPrefix: prefix });
    },
    invalidateAll() {
      resolver.invalidateAll();
      return announce({ everyKey: true });
    },
    async close() {
      closed = true;
      if (!subscription.isClosed()) await subscription.drain();
    },
  };
}
