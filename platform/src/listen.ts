// Binds a server (HTTP, SMTP's underlying net.Server, ...) and answers the port it got: port 0 picks a free one.
import type { AddressInfo, Server } from 'node:net';

/** Resolves once `server` listens; rejects with the bind error (EADDRINUSE, EACCES) instead of emitting it later. */
export function listenOn(server: Server, port: number, host: string): Promise<number> {
  return new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, () => {
      server.off('error', reject);
      resolve((server.address() as AddressInfo).port);
    });
  });
}
