// Polling with a deadline, the one way tests wait for something to converge: the probe answers undefined or false
// while it has not (a probe that throws counts as not yet, and the error is reported if time runs out), anything
// else is the answer. Fails with what it was waiting for and what was last seen.
export interface WaitOptions {
  readonly timeoutMs: number;
  /** Pause between probes; default 100 ms. */
  readonly intervalMs?: number;
  /** What is awaited, for the failure message ("the message to be sent"). */
  readonly what: string;
}

export async function waitFor<T>(probe: () => T | undefined | false | Promise<T | undefined | false>, options: WaitOptions): Promise<T> {
  const deadline = Date.now() + options.timeoutMs;
  let last: unknown;
  for (;;) {
    try {
      const value = await probe();
      if (value !== undefined && value !== false) return value;
    } catch (error) {
      last = error;
    }
    if (Date.now() > deadline) {
      throw new Error(`timed out after ${options.timeoutMs} ms waiting for ${options.what}${last ? `: ${String(last)}` : ''}`);
    }
    await new Promise((resolve) => setTimeout(resolve, options.intervalMs ?? 100));
  }
}
