// The bench's handle on its webhook receiver process (webhook-receiver-process.ts).
import { startChild } from './child.ts';

export interface WebhookCounts {
  /** Requests answered (204), and the distinct webhook-ids among them. */
  readonly requests: number;
  readonly distinct: number;
  /** The receiver's clock (ms) at the first and the last request since the last resetTimes(); null if none. */
  readonly firstAt: number | null;
  readonly lastAt: number | null;
}

export interface BenchWebhookReceiver {
  /** The endpoint URL (http://127.0.0.1:<port>/hooks). */
  readonly url: string;
  readonly pid: number | undefined;
  counts(): Promise<WebhookCounts>;
  /** Forgets the first and last arrival times, so the next request opens a new span. */
  resetTimes(): Promise<void>;
  stop(): Promise<void>;
}

export async function startBenchWebhookReceiver(): Promise<BenchWebhookReceiver> {
  const child = await startChild<{ url: string }>(new URL('./webhook-receiver-process.ts', import.meta.url), []);
  return {
    url: child.ready.url,
    pid: child.pid,
    counts: async () => {
      const { requests, distinct, firstAt, lastAt } = await child.ask<WebhookCounts>({ type: 'count' });
      return { requests, distinct, firstAt, lastAt };
    },
    resetTimes: async () => void (await child.ask({ type: 'reset-times' })),
    stop: () => child.stop(),
  };
}
