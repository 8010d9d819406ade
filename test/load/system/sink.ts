// The bench's handle on its SMTP sink process (sink-process.ts).
import { startChild } from './child.ts';

export interface BenchSink {
  readonly port: number;
  readonly pid: number | undefined;
  /** Mails stored so far. */
  received(): Promise<number>;
  /** Holds every recipient this long before accepting it (0: answer at once). */
  setDelay(ms: number): Promise<void>;
  stop(): Promise<void>;
}

export async function startBenchSink(dir: string): Promise<BenchSink> {
  const child = await startChild<{ port: number }>(new URL('./sink-process.ts', import.meta.url), [dir]);
  return {
    port: child.ready.port,
    pid: child.pid,
    received: async () => (await child.ask<{ received: number }>({ type: 'received' })).received,
    setDelay: async (ms) => void (await child.ask({ type: 'delay', ms })),
    stop: () => child.stop(),
  };
}
