// A real HTTP receiver of webhooks for the end-to-end suites: every request it gets is verified with the
// `standardwebhooks` library (not Notify's own code) against the secrets it was given, and kept. How it answers is set
// per test: 2xx, a status, never, or slowly; it can be stopped (connection refused) and started again on its port.
import { randomBytes } from 'node:crypto';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import type pg from 'pg';
import { Webhook } from 'standardwebhooks';

export interface ReceivedWebhook {
  readonly id: string;
  readonly timestamp: string;
  readonly signature: string;
  readonly body: Record<string, unknown> & { type: string; data: Record<string, unknown> };
  /** The secrets (of those given) its signature verified with. */
  readonly verifiedWith: readonly string[];
  readonly at: number;
}

/** How the receiver answers one request: a status (and headers), or `hang` (it never answers). */
export type Answer = { status: number; headers?: Record<string, string>; delayMs?: number } | 'hang';

export interface WebhookReceiver {
  readonly url: string;
  readonly received: ReceivedWebhook[];
  /** Requests whose signature verified with none of the secrets. */
  readonly unverified: string[];
  secrets: string[];
  answer: (webhook: ReceivedWebhook) => Answer;
  /** Requests being answered right now. */
  open(): number;
  /** The most requests it had open at once. */
  maxOpen(): number;
  start(): Promise<void>;
  stop(): Promise<void>;
}

export async function startWebhookReceiver(secrets: string[]): Promise<WebhookReceiver> {
  let server: Server | undefined;
  let port = 0;
  let open = 0;
  let maxOpen = 0;
  const receiver: WebhookReceiver = {
    url: '',
    received: [],
    unverified: [],
    secrets,
    answer: () => ({ status: 204 }),
    open: () => open,
    maxOpen: () => maxOpen,
    async start() {
      server = createServer((request, response) => void handle(request, response));
      await new Promise<void>((resolve) => server?.listen(port, '127.0.0.1', resolve));
      port = (server.address() as AddressInfo).port;
      (receiver as { url: string }).url = `http://127.0.0.1:${port}/hooks`;
    },
    async stop() {
      const stopping = server;
      server = undefined;
      if (!stopping) return;
      stopping.closeAllConnections();
      await new Promise<void>((resolve) => stopping.close(() => resolve()));
    },
  };

  async function handle(request: IncomingMessage, response: ServerResponse): Promise<void> {
    open += 1;
    maxOpen = Math.max(maxOpen, open);
    response.on('close', () => (open -= 1));
    const chunks: Buffer[] = [];
    for await (const chunk of request) chunks.push(chunk as Buffer);
    const payload = Buffer.concat(chunks).toString('utf8');
    const headers = {
      'webhook-id': String(request.headers['webhook-id']),
      'webhook-timestamp': String(request.headers['webhook-timestamp']),
      'webhook-signature': String(request.headers['webhook-signature']),
    };
    const verifiedWith = receiver.secrets.filter((secret) => {
      try {
        new Webhook(secret).verify(payload, headers);
        return true;
      } catch {
        return false;
      }
    });
    if (verifiedWith.length === 0) {
      receiver.unverified.push(headers['webhook-id']);
      response.writeHead(400).end('bad signature');
      return;
    }
    const webhook: ReceivedWebhook = {
      id: headers['webhook-id'],
      timestamp: headers['webhook-timestamp'],
      signature: headers['webhook-signature'],
      body: JSON.parse(payload),
      verifiedWith,
      at: Date.now(),
    };
    const answer = receiver.answer(webhook);
    if (answer === 'hang') return;
    if (answer.delayMs) await new Promise((resolve) => setTimeout(resolve, answer.delayMs));
    // Kept once answered with a 2xx: what the receiver "got" is what it acknowledged.
    if (answer.status >= 200 && answer.status < 300) receiver.received.push(webhook);
    if (!response.destroyed) response.writeHead(answer.status, answer.headers).end();
  }

  await receiver.start();
  return receiver;
}

/** A receiver with a new secret and an enabled endpoint of the tenant's project for `types`, written to its table. */
export async function subscribedReceiver(
  db: pg.Pool,
  tenant: { projectId: number; organizationId: number },
  types: readonly string[],
): Promise<WebhookReceiver> {
  const secret = `whsec_${randomBytes(24).toString('base64')}`;
  const receiver = await startWebhookReceiver([secret]);
  await db.query('INSERT INTO webhook_endpoints (project_id, organization_id, url, event_types, secret) VALUES ($1, $2, $3, $4, $5)', [
    tenant.projectId,
    tenant.organizationId,
    receiver.url,
    types,
    secret,
  ]);
  return receiver;
}

/** The verified webhooks of `type` about one message received so far. */
export function webhooksAbout(receiver: WebhookReceiver, type: string, messageId: number): ReceivedWebhook[] {
  return receiver.received.filter((webhook) => webhook.body.type === type && webhook.body.data.message_id === messageId && webhook.verifiedWith.length > 0);
}
