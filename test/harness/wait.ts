// Polling with a deadline: end-to-end assertions wait for the system to converge, then fail with what was last seen.
export async function waitFor<T>(probe: () => Promise<T | undefined>, options: { timeoutMs: number; intervalMs?: number; what: string }): Promise<T> {
  const deadline = Date.now() + options.timeoutMs;
  let last: unknown;
  for (;;) {
    try {
      const value = await probe();
      if (value !== undefined) return value;
    } catch (error) {
      last = error;
    }
    if (Date.now() > deadline) {
      throw new Error(`timed out after ${options.timeoutMs} ms waiting for ${options.what}${last ? `: ${String(last)}` : ''}`);
    }
    await new Promise((resolve) => setTimeout(resolve, options.intervalMs ?? 100));
  }
}
