// Is PostgreSQL / Redis / NATS with JetStream answering on an address? A TCP connection plus the first exchange of
// each protocol, so a different program on the port is told apart from the real thing (and from nothing at all).
import { connect } from 'node:net';

export interface Endpoint {
  readonly host: string;
  readonly port: number;
}

export type ProbeResult =
  /** The service answers as expected. */
  | { readonly state: 'ready'; readonly note?: string }
  /** Nothing listens (or nothing answers in time). */
  | { readonly state: 'absent'; readonly reason: string }
  /** Something listens but is not usable as this service. */
  | { readonly state: 'wrong'; readonly reason: string };

/**
 * Connects, writes `greeting` (if any), and collects bytes until `complete` says enough arrived (or the peer closes,
 * or time runs out). Resolves what arrived, or the error and whether a connection was made at all.
 */
function exchange(
  endpoint: Endpoint,
  greeting: Buffer | null,
  complete: (received: Buffer) => boolean,
  timeoutMs: number,
): Promise<{ data: Buffer } | { error: string; connected: boolean }> {
  return new Promise((resolve) => {
    let received = Buffer.alloc(0);
    let connected = false;
    const socket = connect({ host: endpoint.host, port: endpoint.port });
    const finish = (result: { data: Buffer } | { error: string; connected: boolean }): void => {
      clearTimeout(timer);
      socket.destroy();
      resolve(result);
    };
    const timer = setTimeout(() => finish(connected ? { data: received } : { error: 'connection timed out', connected }), timeoutMs);
    socket.once('connect', () => {
      connected = true;
      if (greeting) socket.write(greeting);
    });
    socket.on('data', (chunk: Buffer) => {
      received = Buffer.concat([received, chunk]);
      if (complete(received)) finish({ data: received });
    });
    socket.once('end', () => finish({ data: received }));
    socket.once('error', (error: NodeJS.ErrnoException) => finish({ error: error.code ?? error.message, connected }));
  });
}

function absentOrWrong(result: { error: string; connected: boolean }): ProbeResult {
  return result.connected ? { state: 'wrong', reason: `connection failed: ${result.error}` } : { state: 'absent', reason: result.error };
}

// SSLRequest: length 8, code 80877103. A PostgreSQL server answers one byte, 'S' or 'N', before any authentication.
const sslRequest = Buffer.from([0, 0, 0, 8, 0x04, 0xd2, 0x16, 0x2f]);

export async function probePostgres(endpoint: Endpoint, timeoutMs = 2_000): Promise<ProbeResult> {
  const result = await exchange(endpoint, sslRequest, (received) => received.length >= 1, timeoutMs);
  if ('error' in result) return absentOrWrong(result);
  const answer = result.data.subarray(0, 1).toString('latin1');
  return answer === 'S' || answer === 'N' ? { state: 'ready' } : { state: 'wrong', reason: 'it does not speak the PostgreSQL protocol' };
}

export async function probeRedis(endpoint: Endpoint, timeoutMs = 2_000): Promise<ProbeResult> {
  const result = await exchange(endpoint, Buffer.from('PING\r\n'), (received) => received.includes('\r\n'), timeoutMs);
  if ('error' in result) return absentOrWrong(result);
  const line = result.data.toString('latin1').split('\r\n')[0] ?? '';
  if (line === '+PONG') return { state: 'ready' };
  // A Redis that wants a password is still Redis: left alone, REDIS_URL must carry the credentials.
  if (line.startsWith('-NOAUTH')) return { state: 'ready', note: 'it requires authentication: put the password in REDIS_URL' };
  return { state: 'wrong', reason: 'it does not answer PING like Redis' };
}

export async function probeNats(endpoint: Endpoint, timeoutMs = 2_000): Promise<ProbeResult> {
  // A NATS server speaks first: `INFO {json}\r\n`, which says whether JetStream is enabled.
  const result = await exchange(endpoint, null, (received) => received.includes('\r\n'), timeoutMs);
  if ('error' in result) return absentOrWrong(result);
  const line = result.data.toString('utf8').split('\r\n')[0] ?? '';
  if (!line.startsWith('INFO ')) return { state: 'wrong', reason: 'it does not greet like a NATS server' };
  let info: { jetstream?: unknown };
  try {
    info = JSON.parse(line.slice(5)) as { jetstream?: unknown };
  } catch {
    return { state: 'wrong', reason: 'its INFO line is not JSON' };
  }
  return info.jetstream === true ? { state: 'ready' } : { state: 'wrong', reason: 'NATS is running without JetStream (start it with -js)' };
}
