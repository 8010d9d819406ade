// `notifyctl webhook listen`: a local receiver that prints every webhook request it gets and whether its signature
// verifies, so an operator can watch events leave Notify. Answers 204, or 401 when a secret was given and the request
// does not verify (as a real receiver should), so the attempts log shows both.
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { listenOn } from '@notify/platform';
import { cell, type Io } from '../output.ts';
import { type Verification, verifySignature } from './signature.ts';

/** Webhook bodies are small JSON documents; anything larger is refused unread. */
const maxBodyBytes = 1024 * 1024;

export interface ListenOptions {
  readonly host: string;
  readonly port: number;
  /** The endpoint's signing key (see secretKey); undefined to print without verifying. */
  readonly key: Buffer | undefined;
  readonly io: Io;
  readonly json: boolean;
  readonly now?: () => Date;
}

export interface Listener {
  readonly port: number;
  readonly closed: Promise<void>;
  close(): Promise<void>;
}

function header(request: IncomingMessage, name: string): string | undefined {
  const value = request.headers[name];
  return Array.isArray(value) ? value.join(' ') : value;
}

async function readBody(request: IncomingMessage): Promise<Buffer | undefined> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of request as AsyncIterable<Buffer>) {
    size += chunk.length;
    if (size > maxBodyBytes) return undefined;
    chunks.push(chunk);
  }
  return Buffer.concat(chunks);
}

/** One line for people: when, webhook-id, type, message, status, and the verdict. */
function describe(at: Date, id: string | undefined, body: Buffer, verification: Verification | undefined): string {
  let summary = `${body.length} bytes that are not a webhook event`;
  try {
    const event = JSON.parse(body.toString('utf8')) as { type?: unknown; data?: { message_id?: unknown; status?: unknown; sequence?: unknown } };
    if (typeof event.type === 'string')
      summary = `${event.type} message ${String(event.data?.message_id)} ${String(event.data?.status)} (sequence ${String(event.data?.sequence)})`;
  } catch {
    // Printed as "not a webhook event".
  }
  const verdict =
    verification === undefined ? 'signature not checked (no --secret)' : verification.ok ? 'signature verified' : `signature INVALID: ${verification.problem}`;
  return `${at.toISOString()}  ${cell(id ?? '-', 40)}  ${cell(summary, 120)}  ${verdict}\n`;
}

export async function listen(options: ListenOptions): Promise<Listener> {
  const now = options.now ?? (() => new Date());
  const handle = async (request: IncomingMessage, response: ServerResponse): Promise<void> => {
    if (request.method !== 'POST') {
      response.writeHead(405, { Allow: 'POST' }).end();
      return;
    }
    const body = await readBody(request);
    if (body === undefined) {
      response.writeHead(413).end();
      return;
    }
    const at = now();
    const id = header(request, 'webhook-id');
    const signed = { id, timestamp: header(request, 'webhook-timestamp'), signature: header(request, 'webhook-signature'), body };
    const verification = options.key ? verifySignature(options.key, signed, Math.floor(at.getTime() / 1000)) : undefined;
    if (options.json) {
      let event: unknown = null;
      try {
        event = JSON.parse(body.toString('utf8'));
      } catch {
        // `event` stays null: the body was not JSON.
      }
      const verified = verification === undefined ? null : verification.ok;
      const problem = verification && !verification.ok ? verification.problem : null;
      options.io.stdout(`${JSON.stringify({ receivedAt: at.toISOString(), webhookId: id ?? null, verified, problem, event })}\n`);
    } else {
      options.io.stdout(describe(at, id, body, verification));
    }
    response.writeHead(verification && !verification.ok ? 401 : 204).end();
  };
  const server: Server = createServer((request, response) => {
    handle(request, response).catch(() => response.destroy());
  });
  const port = await listenOn(server, options.port, options.host);
  const closed = new Promise<void>((resolve) => server.once('close', () => resolve()));
  return {
    port,
    closed,
    async close() {
      server.closeAllConnections();
      server.close();
      await closed;
    },
  };
}
