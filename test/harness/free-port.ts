// A free TCP port on this machine, for processes a test starts beside the stack (a private redis-server, a second
// gateway). Bound on every interface, where the services listen, so a conflict would show here first.
import { createServer } from 'node:net';

export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen({ port: 0, host: '0.0.0.0', exclusive: true }, () => {
      const address = server.address();
      server.close(() => (address && typeof address === 'object' ? resolve(address.port) : reject(new Error('no port bound'))));
    });
  });
}
