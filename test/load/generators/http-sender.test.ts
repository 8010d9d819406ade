// The bench's HTTP sender closes its idle keep-alive sockets well before a server with Node's default keep-alive
// timeout (5 s) would, and that idle timeout does not cut short an answer that is merely slow.
import assert from 'node:assert/strict';
import { createServer, type Server } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import { after, before, test } from 'node:test';
import { createHttpSender, idleSocketMs } from './http-sender.ts';

let server: Server;
let url: string;
const closedAt = new Map<Socket, number>();

before(async () => {
  server = createServer((request, response) => {
    request.resume();
    setTimeout(() => response.end('{}'), request.url === '/slow' ? idleSocketMs + 1_000 : 1);
  });
  server.on('connection', (socket: Socket) => socket.on('close', () => closedAt.set(socket, performance.now())));
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});

after(async () => {
  server.closeAllConnections();
  await new Promise((resolve) => server.close(resolve));
});

test('an idle keep-alive socket is closed by the sender after idleSocketMs, seconds before the server would close it', async () => {
  assert.equal(server.keepAliveTimeout, 5_000, "Node's default, which the gateway keeps");
  const sender = createHttpSender({ url, connections: 1, expected: 1, timeoutMs: 10_000 });
  closedAt.clear();
  await sender.send({ path: '/fast', headers: {}, body: Buffer.from('{}') });
  const answeredAt = performance.now();
  while (closedAt.size === 0 && performance.now() - answeredAt < 6_000) await new Promise((resolve) => setTimeout(resolve, 50));
  const [closed] = [...closedAt.values()];
  assert.ok(closed !== undefined, 'the socket was closed');
  const idleMs = closed - answeredAt;
  assert.ok(idleMs >= idleSocketMs - 100 && idleMs < server.keepAliveTimeout - 1_500, `closed after ${Math.round(idleMs)} ms idle`);
  assert.equal(sender.finish().completed, 1);
});

test('an answer slower than idleSocketMs is still waited for, up to the request deadline', async () => {
  const sender = createHttpSender({ url, connections: 1, expected: 1, timeoutMs: 10_000 });
  await sender.send({ path: '/slow', headers: {}, body: Buffer.from('{}') });
  const result = sender.finish();
  assert.deepEqual([result.completed, result.errors, result.timeouts, result.statuses], [1, 0, 0, { '200': 1 }]);
});
