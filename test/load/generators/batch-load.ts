// A fixed list of distinct requests sent as fast as `connections` in flight allow, each exactly once and in order
// (autocannon would start every connection at the first request, sending the same Idempotency-Key 64 times at once).
import { createHttpSender, type PreparedRequest } from './http-sender.ts';
import type { LoadResult } from './load-result.ts';

export async function runBatch(options: {
  url: string;
  connections: number;
  requests: readonly PreparedRequest[];
  timeoutMs?: number;
}): Promise<LoadResult & { readonly replayed: number }> {
  const sender = createHttpSender({
    url: options.url,
    connections: options.connections,
    expected: options.requests.length,
    timeoutMs: options.timeoutMs ?? 10_000,
  });
  let next = 0;
  const worker = async (): Promise<void> => {
    while (next < options.requests.length) await sender.send(options.requests[next++] as PreparedRequest);
  };
  await Promise.all(Array.from({ length: Math.min(options.connections, options.requests.length) }, worker));
  return sender.finish();
}
