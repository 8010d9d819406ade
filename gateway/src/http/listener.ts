// The public HTTP listener and its graceful stop: refuse new connections, let requests in flight finish, then close.
import { createServer, type RequestListener, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';

export interface HttpListener {
  readonly port: number;
  /** Stops accepting connections; idle keep-alive connections are closed at once. */
  stopAccepting(): void;
  /** Resolves once every request in flight has been answered and its connection closed. */
  drained(): Promise<void>;
}

export async function listen(handler: RequestListener, port: number, host = '0.0.0.0'): Promise<HttpListener> {
  const server: Server = createServer(handler);
  // A client that trickles its headers or body does not hold a connection forever.
  server.headersTimeout = 10_000;
  server.requestTimeout = 30_000;
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, () => resolve());
  });
  let closed: Promise<void> | undefined;
  const close = (): Promise<void> => (closed ??= new Promise((resolve) => server.close(() => resolve())));
  return {
    port: (server.address() as AddressInfo).port,
    stopAccepting: () => void close(),
    async drained() {
      // Keep-alive connections become idle once their request is answered; close each as soon as it does.
      const sweep = setInterval(() => server.closeIdleConnections(), 100);
      try {
        await close();
      } finally {
        clearInterval(sweep);
      }
    },
  };
}
