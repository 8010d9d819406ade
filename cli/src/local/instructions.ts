// What `npm start` prints once everything is up: a curl to paste, where the mail lands, how to point notifyctl here,
// and how to receive the demo project's webhooks on this machine.
import { randomUUID } from 'node:crypto';
import type { StackEnvironment } from './stack.ts';

export interface HttpRequest {
  readonly method: 'POST';
  readonly url: string;
  readonly headers: Readonly<Record<string, string>>;
  readonly body: string;
}

/** The demo send: template `welcome` to ada@example.com, under a fresh Idempotency-Key. */
export function demoSendRequest(gatewayUrl: string, tenant: { apiKey: string; organizationId: number }, idempotencyKey: string = randomUUID()): HttpRequest {
  return {
    method: 'POST',
    url: `${gatewayUrl}/api/v1/send/`,
    headers: {
      Authorization: `Api-Key ${tenant.apiKey}`,
      'X-Organization-ID': String(tenant.organizationId),
      'Content-Type': 'application/json',
      'Idempotency-Key': idempotencyKey,
    },
    body: JSON.stringify({ template: 'welcome', to: 'ada@example.com', channel: 'email', data: { name: 'Ada' } }),
  };
}

/** POSIX shell single quoting: safe for any value. */
export function shellQuote(value: string): string {
  return /^[A-Za-z0-9_./:@%+=,-]+$/.test(value) ? value : `'${value.replaceAll("'", `'\\''`)}'`;
}

export function curlCommand(request: HttpRequest): string {
  const lines = [`curl -sS -i -X ${request.method} ${shellQuote(request.url)}`];
  for (const [name, value] of Object.entries(request.headers)) lines.push(`  -H ${shellQuote(`${name}: ${value}`)}`);
  lines.push(`  --data ${shellQuote(request.body)}`);
  return lines.join(' \\\n');
}

/** Where `notifyctl webhook listen` receives in the printed instructions. */
const demoWebhookPort = 9000;

export function readyMessage(options: { request: HttpRequest; env: StackEnvironment; mailDir: string; projectId: number }): string {
  const { env } = options;
  const exports = ['AUTH_SVC_ADDR', 'DISPATCH_SVC_ADDR', 'ADMIN_TOKEN'] as const;
  return `
Notify is running: gateway on ${env.GATEWAY_URL}.

Send the demo mail (sending it again with the same Idempotency-Key replays the first answer):

${curlCommand(options.request)}

The mail lands in ${options.mailDir}/ as an .eml file, and the smtp-sink log line names its subject.

Use notifyctl against this stack (ADMIN_TOKEN for every command):

${exports.map((name) => `export ${name}=${shellQuote(env[name])}`).join('\n')}
npm run notifyctl -- messages list --project ${options.projectId}

Watch the webhooks of the demo project (plain http to this machine is allowed here): create an endpoint, which prints
its signing secret once, then, in another shell with the same exports, receive and verify what is sent to it:

npm run notifyctl -- webhook create --project ${options.projectId} --url http://127.0.0.1:${demoWebhookPort}/
npm run notifyctl -- webhook listen --port ${demoWebhookPort} --secret-file -   # paste the secret create printed, Enter, Ctrl-D
npm run notifyctl -- webhook attempts --id ID   # ID as create printed it: each attempt, its status and latency

Ctrl-C stops everything.
`;
}
