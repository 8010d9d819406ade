// A TCP forwarder on a free loopback port standing in for a Kubernetes Service (CloudNativePG's `-rw`): every
// connection is piped to the current target, and switching the target closes the connections already open, as a
// Service whose endpoints move to another pod does. Until then a connection to a target that is down is closed at once.
import { connect, createServer, type Socket } from 'node:net';
import { freePort } from './free-port.ts';

export interface TcpForwarder {
  readonly port: number;
  /** The port connections are forwarded to now. */
  readonly targetPort: number;
  /** Forwards new connections to `port` and closes every one open (both ends). */
  switchTo(port: number): void;
  close(): Promise<void>;
}

export async function startTcpForwarder(targetPort: number): Promise<TcpForwarder> {
  let target = targetPort;
  const open = new Set<Socket>();
  const server = createServer((client) => {
    const upstream = connect({ host: '127.0.0.1', port: target });
    for (const socket of [client, upstream]) {
      open.add(socket);
      socket.once('close', () => open.delete(socket));
    }
    // Either end failing or ending closes the other: the client sees its server go away.
    client.once('error', () => upstream.destroy());
    upstream.once('error', () => client.destroy());
    client.once('close', () => upstream.destroy());
    upstream.once('close', () => client.destroy());
    client.pipe(upstream);
    upstream.pipe(client);
  });
  const port = await freePort();
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen({ port, host: '127.0.0.1' }, resolve);
  });
  return {
    port,
    get targetPort() {
      return target;
    },
    switchTo(next) {
      target = next;
      for (const socket of open) socket.destroy();
    },
    close() {
      for (const socket of open) socket.destroy();
      return new Promise((resolve) => server.close(() => resolve()));
    },
  };
}
