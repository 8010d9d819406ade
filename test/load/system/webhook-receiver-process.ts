// A webhook receiver in a process of its own, for the bench's webhook-cost scenario: it answers every request 204 at
// once (reading the body, verifying nothing), so what the bench measures is the sender's work, not the receiver's,
// and the receiver's own CPU is reported apart. It answers how many requests it has got, how many distinct webhook-ids,
// and when the first and the last arrived (milliseconds on its own clock; differences only).
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';

const send = (message: Record<string, unknown>): void => void process.send?.(message);

let requests = 0;
const ids = new Set<string>();
let firstAt: number | undefined;
let lastAt: number | undefined;

const server = createServer((request, response) => {
  request.resume();
  request.on('end', () => {
    const now = performance.now();
    requests += 1;
    ids.add(String(request.headers['webhook-id']));
    firstAt ??= now;
    lastAt = now;
    response.writeHead(204).end();
  });
});
server.keepAliveTimeout = 30_000;
await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
const { port } = server.address() as AddressInfo;

process.on('message', (message: { type: string; id?: number }) => {
  if (message.type === 'count') {
    send({ id: message.id, requests, distinct: ids.size, firstAt: firstAt ?? null, lastAt: lastAt ?? null });
  } else if (message.type === 'reset-times') {
    // The next request starts a new first/last span (the burst measures its own).
    firstAt = undefined;
    lastAt = undefined;
    send({ id: message.id });
  } else if (message.type === 'close') {
    server.closeAllConnections();
    server.close(() => process.exit(0));
  }
});
// The bench going away without a word must not leave the receiver behind.
process.on('disconnect', () => process.exit(0));
send({ type: 'ready', url: `http://127.0.0.1:${port}/hooks` });
