// The public prefixes of every API key that exists (revoked ones too), so that the brute-force guard can tell a
// presentation of a real key (judged, its failures counted against the key) from a guess that names no key (counted
// against the client address, and not even asked about once that address is blocked) without a call per request.
// Loaded from auth-svc (ListKeyPrefixes) before the gateway is ready, kept current by auth-svc's announcements on
// NATS (a created or revoked key's prefix), by every key auth-svc accepts or refuses for its secret, and by a reload
// every `refreshMs` and whenever announcements may have been missed (NATS reconnected). Prefixes are not secrets:
// 64 random bits each, shown in the panel and in logs.
import type { Logger } from '@notify/platform';
import type { InvalidationTarget } from './authorization-invalidation.ts';

/** One page of prefixes after `after`, in order (auth-svc's ListKeyPrefixes). */
export type ListKeyPrefixes = (after: string, limit: number) => Promise<readonly string[]>;

export interface KeyDirectoryOptions {
  readonly list: ListKeyPrefixes;
  readonly logger: Logger;
  /** Between full reloads, which mend announcements NATS lost (default 10 minutes). */
  readonly refreshMs?: number;
  /** Between attempts while auth-svc cannot be asked (default 2 s). */
  readonly retryMs?: number;
}

const pageSize = 10_000;

export class KeyDirectory implements InvalidationTarget {
  readonly #options: KeyDirectoryOptions;
  #prefixes = new Set<string>();
  /** Prefixes learnt while a reload runs, which its result may not hold yet. */
  #learntDuringLoad: Set<string> | undefined;
  #loaded = false;
  #timer: NodeJS.Timeout | undefined;
  #stopped = false;
  #reloading: Promise<void> | undefined;

  constructor(options: KeyDirectoryOptions) {
    this.#options = options;
  }

  /** True once a full load succeeded: before that, no guess can be told from a key. */
  get loaded(): boolean {
    return this.#loaded;
  }

  get size(): number {
    return this.#prefixes.size;
  }

  has(prefix: string): boolean {
    return this.#prefixes.has(prefix);
  }

  /** A key with this prefix exists (announced, or judged by auth-svc). */
  add(prefix: string): void {
    this.#prefixes.add(prefix);
    this.#learntDuringLoad?.add(prefix);
  }

  /** Loads now, retrying until it succeeds (or `stop`), then reloads every `refreshMs`. */
  start(): void {
    const refreshMs = this.#options.refreshMs ?? 600_000;
    const loop = async (): Promise<void> => {
      await this.reload();
      if (!this.#stopped) this.#timer = setTimeout(() => void loop(), this.#loaded ? refreshMs : (this.#options.retryMs ?? 2_000));
      this.#timer?.unref();
    };
    void loop();
  }

  stop(): void {
    this.#stopped = true;
    clearTimeout(this.#timer);
  }

  /** Every prefix from auth-svc, swapped in at once; a failure is logged and the current set kept. */
  reload(): Promise<void> {
    this.#reloading ??= this.#load().finally(() => (this.#reloading = undefined));
    return this.#reloading;
  }

  async #load(): Promise<void> {
    const learnt = new Set<string>();
    this.#learntDuringLoad = learnt;
    try {
      const loaded = new Set<string>();
      for (let after = ''; ; ) {
        const page = await this.#options.list(after, pageSize);
        for (const prefix of page) loaded.add(prefix);
        if (page.length < pageSize) break;
        after = page[page.length - 1] as string;
      }
      for (const prefix of learnt) loaded.add(prefix);
      this.#prefixes = loaded;
      if (!this.#loaded) this.#options.logger.info({ keys: loaded.size }, 'API key prefixes loaded: guesses are told from keys');
      this.#loaded = true;
    } catch (error) {
      this.#options.logger.warn({ err: error }, 'API key prefixes could not be loaded from auth-svc; retrying');
    } finally {
      this.#learntDuringLoad = undefined;
    }
  }

  // Announcements from auth-svc (authorization-invalidation.ts): a prefix announced names a key that exists.
  invalidatePrefix(prefix: string): void {
    this.add(prefix);
  }

  /** A plan changed: no key was created or removed. */
  invalidateAll(): void {}

  /** Announcements may be missed from now on: the periodic reload covers the gap until `resume`. */
  pause(): void {}

  /** Announcements arrive again, but some may have been missed meanwhile: load everything anew. */
  resume(): void {
    void this.reload();
  }
}
