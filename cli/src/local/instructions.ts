// What `npm start` prints once everything is up: a curl to paste, where the mail lands, and how to point notifyctl here.
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

export function readyMessage(options: { request: HttpRequest; env: StackEnvironment; mailDir: string; projectId: number }): string {
  const { env } = options;
  const exports = ['AUTH_SVC_ADDR', 'DISPATCH_SVC_ADDR', 'ADMIN_TOKEN', 'INTERNAL_TOKEN'] as const;
  return `
Notify is running: gateway on ${env.GATEWAY_URL}.

Send the demo mail (sending it again with the same Idempotency-Key replays the first answer):

${curlCommand(options.request)}

The mail lands in ${options.mailDir}/ as an .eml file, and the smtp-sink log line names its subject.

Use notifyctl against this stack (ADMIN_TOKEN for admin commands, INTERNAL_TOKEN for messages list):

${exports.map((name) => `export ${name}=${shellQuote(env[name])}`).join('\n')}
npm run notifyctl -- messages list --project ${options.projectId}

Ctrl-C stops everything.
`;
}
