// A free TCP port on this machine, for processes a test starts beside the stack (a private redis-server, a second
// gateway). Bound on every interface, where the services listen, so a conflict would show here first.
import { createServer } from 'node:net';

/**
 * Ports already handed out by this process. A probe's port is free again once the probe closes, before the process it
 * is meant for binds it, so the kernel may offer it twice: a second gateway once got the same port for its HTTP and
 * its operations listener, and did not start.
 */
const handedOut = new Set<number>();

function probe(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen({ port: 0, host: '0.0.0.0', exclusive: true }, () => {
      const address = server.address();
      server.close(() => (address && typeof address === 'object' ? resolve(address.port) : reject(new Error('no port bound'))));
    });
  });
}

/** A free port this process has not handed out before. */
export async function freePort(): Promise<number> {
  for (;;) {
    const port = await probe();
    if (handedOut.has(port)) continue;
    handedOut.add(port);
    return port;
  }
}
