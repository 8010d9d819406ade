// The public HTTP listener and its graceful stop: refuse new connections, let requests in flight finish, then close.
import { randomUUID } from 'node:crypto';
import { createServer, type RequestListener, type Server } from 'node:http';
import type { Socket } from 'node:net';
import { listenOn, tracedRequests } from '@notify/platform';

export interface HttpListener {
  readonly port: number;
  /** Stops accepting connections; idle keep-alive connections are closed at once. */
  stopAccepting(): void;
  /** Resolves once every request in flight has been answered and its connection closed. */
  drained(): Promise<void>;
}

/**
 * Requests Node's parser refuses (malformed header, conflicting framing, oversized headers) never reach Koa; they still
 * get the contract's headers and a `{detail, code}` body instead of Node's bare status line.
 */
const badRequest = { detail: 'The request could not be parsed as HTTP.', code: 'bad_request' };

function rawResponse(status: string, body: object): string {
  const text = JSON.stringify(body);
  return (
    `HTTP/1.1 ${status}\r\nX-Request-ID: ${randomUUID()}\r\nCache-Control: no-store\r\nContent-Language: en\r\n` +
    `Content-Type: application/json; charset=utf-8\r\nContent-Length: ${Buffer.byteLength(text)}\r\nConnection: close\r\n\r\n${text}`
  );
}

function answerUnparsable(error: Error & { code?: string }, socket: Socket): void {
  if (!socket.writable || error.code === 'ECONNRESET') return void socket.destroy();
  socket.end(
    error.code === 'HPE_HEADER_OVERFLOW'
      ? rawResponse('431 Request Header Fields Too Large', { detail: 'The request headers are too large.', code: 'headers_too_large' })
      : rawResponse('400 Bad Request', badRequest),
  );
}

/** RFC 9112 §3.2: an HTTP/1.1 request without Host is answered 400, here in the contract's shape. */
function requireHost(handler: RequestListener): RequestListener {
  return (req, res) => {
    if (req.httpVersion === '1.1' && req.headers.host === undefined) {
      res.socket?.end(rawResponse('400 Bad Request', badRequest));
      return;
    }
    handler(req, res);
  };
}

export interface ListenOptions {
  readonly host?: string;
  /** HTTP_KEEP_ALIVE_TIMEOUT: how long an idle connection waits for its next request. */
  readonly keepAliveTimeoutMs?: number;
}

export async function listen(handler: RequestListener, port: number, options: ListenOptions = {}): Promise<HttpListener> {
  // Node's own check would answer a request without Host with a bare 400; requireHost answers it in the contract's shape.
  // Each request is served in its trace, whose ids its log lines and its gRPC calls carry.
  const server: Server = createServer({ requireHostHeader: false }, tracedRequests(requireHost(handler)));
  server.on('clientError', answerUnparsable);
  // An idle connection stays open longer than the load balancers and client pools in front of the gateway keep theirs,
  // so that the gateway is never the side that closes a connection while a request is on its way (a client cannot
  // tell whether a POST it sent on a reset connection was accepted).
  server.keepAliveTimeout = options.keepAliveTimeoutMs ?? 75_000;
  // A client that trickles its headers or body does not hold a connection forever. Node counts headersTimeout from a
  // request's first byte, not from the previous response, so it may stay below keepAliveTimeout: a connection idle
  // for longer is still served (listener.test.ts).
  server.headersTimeout = 10_000;
  server.requestTimeout = 30_000;
  const boundPort = await listenOn(server, port, options.host ?? '0.0.0.0');
  let closed: Promise<void> | undefined;
  const close = (): Promise<void> => (closed ??= new Promise((resolve) => server.close(() => resolve())));
  return {
    port: boundPort,
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
