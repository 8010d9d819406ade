// Group commit: work submitted concurrently is carried out in batches, each submitter waiting for the batch it landed
// in. A batch starts as soon as fewer than `concurrency` are running; what arrives while all of them run forms the
// next one. Alone, a request is a batch of one and waits for nothing, and batches grow only as load does. With
// `overlapAfterMs`, what arrives while a batch runs waits for it unless it runs that long: fuller batches while they
// end quickly, and no wait behind one that is stuck (a lock, a slow disk) longer than that. With `spacingMs`, batches
// that are not full start at most that often, for work nobody waits on (fewer, fuller statements at any load).

export interface BatcherOptions<T, R> {
  /** Most items one batch takes. */
  readonly maxBatchSize: number;
  /** Batches carried out at once, at most. */
  readonly concurrency: number;
  /**
   * When set, a batch starts while others run only once each of them has run this long; until then what arrives waits
   * for the next batch to end. Unset, a batch starts whenever fewer than `concurrency` run.
   */
  readonly overlapAfterMs?: number;
  /**
   * When set, a batch that is not full starts no sooner than this long after the one before it started: what arrives
   * meanwhile waits and goes with it. A full batch starts at once.
   */
  readonly spacingMs?: number;
  /** Carries out one batch and settles each item, in order; a rejection settles every item of the batch with it. */
  readonly run: (items: readonly T[]) => Promise<readonly PromiseSettledResult<R>[]>;
}

/** An item's result for `run`: carried out. */
export const fulfilled = <R>(value: R): PromiseFulfilledResult<R> => ({ status: 'fulfilled', value });

interface Entry<T, R> {
  readonly item: T;
  readonly resolve: (value: R) => void;
  readonly reject: (reason: unknown) => void;
}

export class Batcher<T, R> {
  readonly #options: BatcherOptions<T, R>;
  #queue: Entry<T, R>[] = [];
  /** When each running batch started (performance.now()). */
  #runningSince: number[] = [];
  #drainScheduled = false;
  /** When the last batch started (performance.now()), for `spacingMs`. */
  #lastStarted = Number.NEGATIVE_INFINITY;
  /** The timer that drains again once a batch may start (`overlapAfterMs`, `spacingMs`), and its time. */
  #timer: ReturnType<typeof setTimeout> | undefined;
  #timerDue = 0;

  constructor(options: BatcherOptions<T, R>) {
    if (!(options.maxBatchSize >= 1 && options.concurrency >= 1)) throw new RangeError('maxBatchSize and concurrency must be at least 1');
    this.#options = options;
  }

  submit(item: T): Promise<R> {
    return new Promise<R>((resolve, reject) => {
      this.#queue.push({ item, resolve, reject });
      // After the current tick: calls that arrived together (one socket read of several gRPC calls) share a batch.
      if (!this.#drainScheduled) {
        this.#drainScheduled = true;
        queueMicrotask(() => {
          this.#drainScheduled = false;
          this.#drain();
        });
      }
    });
  }

  #drain(): void {
    const { concurrency, maxBatchSize, overlapAfterMs, spacingMs } = this.#options;
    while (this.#runningSince.length < concurrency && this.#queue.length > 0) {
      if (spacingMs !== undefined && this.#queue.length < maxBatchSize && this.#lastStarted + spacingMs > performance.now()) {
        this.#drainAt(this.#lastStarted + spacingMs);
        return;
      }
      if (overlapAfterMs !== undefined && this.#runningSince.length > 0) {
        const due = Math.max(...this.#runningSince) + overlapAfterMs;
        if (due > performance.now()) {
          this.#drainAt(due);
          return;
        }
      }
      const batch = this.#queue.splice(0, maxBatchSize);
      const started = performance.now();
      this.#lastStarted = started;
      this.#runningSince.push(started);
      void this.#carryOut(batch, started);
    }
  }

  /** Drains again at `due` (or earlier, if a timer is already set for then). */
  #drainAt(due: number): void {
    if (this.#timer !== undefined && this.#timerDue <= due) return;
    clearTimeout(this.#timer);
    this.#timerDue = due;
    this.#timer = setTimeout(
      () => {
        this.#timer = undefined;
        this.#drain();
      },
      Math.ceil(due - performance.now()),
    );
    // A running batch keeps the process alive while it matters, so beside one the timer alone must not hold a
    // shutdown; with none running (spacing), the timer is what carries out the waiting items.
    if (this.#runningSince.length > 0) this.#timer.unref();
  }

  async #carryOut(batch: Entry<T, R>[], started: number): Promise<void> {
    try {
      const results = await this.#options.run(batch.map((entry) => entry.item));
      batch.forEach((entry, index) => {
        const result = results[index];
        if (!result) entry.reject(new Error(`a batch of ${batch.length} was answered with ${results.length} results`));
        else if (result.status === 'fulfilled') entry.resolve(result.value);
        else entry.reject(result.reason);
      });
    } catch (error) {
      for (const entry of batch) entry.reject(error);
    } finally {
      this.#runningSince.splice(this.#runningSince.indexOf(started), 1);
      this.#drain();
    }
  }
}
