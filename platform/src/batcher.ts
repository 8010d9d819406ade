// Group commit: work submitted concurrently is carried out in batches, each submitter waiting for the batch it landed
// in. A batch starts as soon as fewer than `concurrency` are running; what arrives while all of them run forms the
// next one. Nothing waits on a timer: alone, a request is a batch of one, and batches grow only as load does.

export interface BatcherOptions<T, R> {
  /** Most items one batch takes. */
  readonly maxBatchSize: number;
  /** Batches carried out at once. */
  readonly concurrency: number;
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
  #running = 0;
  #drainScheduled = false;

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
    while (this.#running < this.#options.concurrency && this.#queue.length > 0) {
      const batch = this.#queue.splice(0, this.#options.maxBatchSize);
      this.#running += 1;
      void this.#carryOut(batch);
    }
  }

  async #carryOut(batch: Entry<T, R>[]): Promise<void> {
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
      this.#running -= 1;
      this.#drain();
    }
  }
}
