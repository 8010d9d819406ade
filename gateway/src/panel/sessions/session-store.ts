// Panel sessions live in Redis (the gateway's, shared by every replica) under a random id that only the browser's
// cookie holds. Server-side state makes sign-out and expiry immediate and needs no signing secret to distribute and
// rotate; the key is a hash of the id, so reading Redis yields no cookie that would work.
import { createHash, randomBytes } from 'node:crypto';
import { OperationalError } from '@notify/platform';
import type { Redis } from 'ioredis';

export interface PanelSession {
  readonly userId: number;
  readonly organizationId: number;
  /** The synchronizer token every form of this session carries (CSRF). */
  readonly csrfToken: string;
  /** Sign-in time, epoch ms: the session ends PANEL_SESSION_LIFETIME later. */
  readonly createdAt: number;
  /** The user's password_changed_at at sign-in: once auth-svc reports another, the password changed and this ends. */
  readonly passwordChangedAt: string;
}

export interface SessionStoreOptions {
  readonly redis: Redis;
  /** REDIS_KEY_PREFIX; sessions live under `<prefix>panel-session:`. */
  readonly keyPrefix: string;
  /** PANEL_SESSION_IDLE_TIMEOUT: unused this long, a session is gone. */
  readonly idleMs: number;
  /** PANEL_SESSION_LIFETIME: however used, a session ends this long after sign-in. */
  readonly lifetimeMs: number;
}

/** 256 random bits: as hard to guess as the session itself is valuable. */
export const newToken = (): string => randomBytes(32).toString('base64url');

const tokenPattern = /^[A-Za-z0-9_-]{43}$/;

function isSession(value: unknown): value is PanelSession {
  const session = value as Partial<PanelSession> | null;
  return (
    typeof session?.userId === 'number' &&
    typeof session.organizationId === 'number' &&
    typeof session.csrfToken === 'string' &&
    typeof session.createdAt === 'number' &&
    typeof session.passwordChangedAt === 'string'
  );
}

export class SessionStore {
  readonly #options: SessionStoreOptions;

  constructor(options: SessionStoreOptions) {
    this.#options = options;
  }

  /** Redis failing is a dependency failure (503), not a bug: without it no session can be read or written. */
  async #redis<T>(work: (redis: Redis) => Promise<T>): Promise<T> {
    try {
      return await work(this.#options.redis);
    } catch (error) {
      throw new OperationalError('panel sessions are unavailable: Redis did not answer', { cause: error });
    }
  }

  #key(id: string): string {
    return `${this.#options.keyPrefix}panel-session:${createHash('sha256').update(id).digest('base64url')}`;
  }

  /** A new session (always a new id: an id known before sign-in is never promoted, so it cannot be planted). */
  async create(user: Pick<PanelSession, 'userId' | 'organizationId' | 'passwordChangedAt'>, now = Date.now()): Promise<{ id: string; session: PanelSession }> {
    const id = newToken();
    const session: PanelSession = { ...user, csrfToken: newToken(), createdAt: now };
    await this.#redis((redis) => redis.set(this.#key(id), JSON.stringify(session), 'PX', this.#options.idleMs));
    return { id, session };
  }

  /** The session, its idle timeout restarted; undefined when unknown, expired or past its lifetime. */
  async read(id: string, now = Date.now()): Promise<PanelSession | undefined> {
    if (!tokenPattern.test(id)) return undefined;
    const key = this.#key(id);
    const stored = await this.#redis((redis) => redis.getex(key, 'PX', this.#options.idleMs));
    if (stored === null) return undefined;
    let session: unknown;
    try {
      session = JSON.parse(stored);
    } catch {
      session = undefined;
    }
    if (!isSession(session) || now - session.createdAt >= this.#options.lifetimeMs) {
      await this.#redis((redis) => redis.del(key));
      return undefined;
    }
    return session;
  }

  async destroy(id: string): Promise<void> {
    if (tokenPattern.test(id)) await this.#redis((redis) => redis.del(this.#key(id)));
  }
}
