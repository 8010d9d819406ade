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

export async function listen(handler: RequestListener, port: number, host = '0.0.0.0'): Promise<HttpListener> {
  // Node's own check would answer a request without Host with a bare 400; requireHost answers it in the contract's shape.
  // Each request is served in its trace, whose ids its log lines and its gRPC calls carry.
  const server: Server = createServer({ requireHostHeader: false }, tracedRequests(requireHost(handler)));
  server.on('clientError', answerUnparsable);
  // A client that trickles its headers or body does not hold a connection forever.
  server.headersTimeout = 10_000;
  server.requestTimeout = 30_000;
  const boundPort = await listenOn(server, port, host);
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
