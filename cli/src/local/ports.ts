// Ports for a stack: the ones asked for must be free; the rest (0) are picked by binding port 0, holding every
// probe open until all are chosen so two services never get the same one.
import { createServer, type Server } from 'node:net';

// Services listen on every interface (0.0.0.0), so that is where a conflict would show.
const probeHost = '0.0.0.0';

function listen(port: number): Promise<Server> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen({ port, host: probeHost, exclusive: true }, () => resolve(server));
  });
}

function close(server: Server): Promise<void> {
  return new Promise((resolve) => server.close(() => resolve()));
}

/** Resolves `wanted` (0 = any free port) into distinct free ports, or throws naming each busy one and who wanted it. */
export async function reservePorts(wanted: readonly { name: string; port: number }[]): Promise<number[]> {
  const probes: Server[] = [];
  const busy: string[] = [];
  const ports: number[] = [];
  try {
    for (const { name, port } of wanted) {
      try {
        const server = await listen(port);
        probes.push(server);
        ports.push((server.address() as { port: number }).port);
      } catch (error) {
        if ((error as NodeJS.ErrnoException).code !== 'EADDRINUSE') throw error;
        busy.push(`${port} (${name})`);
        ports.push(port);
      }
    }
  } finally {
    await Promise.all(probes.map(close));
  }
  if (busy.length > 0) throw new Error(`port${busy.length > 1 ? 's' : ''} already in use: ${busy.join(', ')}`);
  return ports;
}
