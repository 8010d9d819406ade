// Ordered graceful shutdown: handlers run by priority (lowest first), each bounded in time; failures are reported, not swallowed.
import type { Logger } from './logger.ts';

/** Conventional priorities, so services agree on what stops first. */
export const ShutdownPriority = {
  /** Stop taking new work: health NOT_SERVING, stop listening, stop pulling. */
  stopIntake: 10,
  /** Let held work finish: in-flight requests, jobs being delivered. */
  drain: 20,
  /** Close connections to dependencies: database pools, NATS, Redis, gRPC clients. */
  closeClients: 30,
  /** Last: the operations listener, so metrics are scrapeable until the end. */
  final: 90,
} as const;

interface Handler {
  name: string;
  priority: number;
  run: () => Promise<void>;
}

export class Lifecycle {
  readonly #handlers: Handler[] = [];
  readonly #logger: Logger;
  readonly #timeoutMs: number;
  #shutdown: Promise<boolean> | undefined;

  constructor(logger: Logger, timeoutMs: number) {
    this.#logger = logger;
    this.#timeoutMs = timeoutMs;
  }

  get stopping(): boolean {
    return this.#shutdown !== undefined;
  }

  onShutdown(name: string, priority: number, run: () => Promise<void>): void {
    this.#handlers.push({ name, priority, run });
  }

  /** Runs every handler once, in priority order (registration order within a priority). Resolves true when all succeeded. */
  shutdown(reason: string): Promise<boolean> {
    this.#shutdown ??= this.#runAll(reason);
    return this.#shutdown;
  }

  async #runAll(reason: string): Promise<boolean> {
    this.#logger.info({ reason }, 'shutting down');
    const ordered = [...this.#handlers].sort((a, b) => a.priority - b.priority);
    let clean = true;
    for (const handler of ordered) {
      const started = performance.now();
      let timer: NodeJS.Timeout | undefined;
      const timeout = new Promise<never>((_, reject) => {
        timer = setTimeout(() => reject(new Error(`did not finish within ${this.#timeoutMs} ms`)), this.#timeoutMs);
      });
      try {
        await Promise.race([handler.run(), timeout]);
        this.#logger.debug({ step: handler.name, ms: Math.round(performance.now() - started) }, 'shutdown step done');
      } catch (error) {
        clean = false;
        this.#logger.error({ step: handler.name, err: error }, 'shutdown step failed');
      } finally {
        clearTimeout(timer);
      }
    }
    this.#logger.info({ clean }, 'stopped');
    return clean;
  }
}
