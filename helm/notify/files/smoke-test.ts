// `helm test`: one real message end to end. POSTs it to the gateway, then follows it with notifyctl (over gRPC to
// dispatch-svc) until the SMTP relay has accepted it ("sent"). Exits 0 then; 1 when the send is refused, the message
// fails, or it is not sent in time. Runs in the toolbox image (Node only, no other dependency); npm test runs the same
// file against a local system.
import { spawn } from 'node:child_process';
import { randomUUID } from 'node:crypto';

interface Settings {
  gatewayUrl: string;
  apiKey: string;
  organizationId: string;
  projectId: string;
  template: string;
  to: string;
  data: unknown;
  timeoutMs: number;
  notifyctl: string;
}

interface ListedMessage {
  id: number;
  state: string;
  failureReason?: string;
  lastSmtpReply?: string;
}

function required(name: string): string {
  const value = process.env[name];
  if (!value) throw new Error(`${name} is not set`);
  return value.trim();
}

function settings(): Settings {
  return {
    gatewayUrl: required('GATEWAY_URL').replace(/\/$/, ''),
    apiKey: required('API_KEY'),
    organizationId: required('ORGANIZATION_ID'),
    projectId: required('PROJECT_ID'),
    template: required('TEMPLATE'),
    to: required('TO'),
    data: JSON.parse(process.env.DATA || '{}') as unknown,
    timeoutMs: Number(process.env.TIMEOUT_SECONDS || '120') * 1000,
    notifyctl: process.env.NOTIFYCTL || 'cli/src/main.ts',
  };
}

function log(message: string): void {
  process.stdout.write(`${new Date().toISOString()} ${message}\n`);
}

async function send(s: Settings): Promise<number> {
  const response = await fetch(`${s.gatewayUrl}/api/v1/send/`, {
    method: 'POST',
    headers: {
      authorization: `Api-Key ${s.apiKey}`,
      'x-organization-id': s.organizationId,
      'content-type': 'application/json',
      'idempotency-key': randomUUID(),
    },
    body: JSON.stringify({ template: s.template, to: s.to, channel: 'email', data: s.data }),
    signal: AbortSignal.timeout(15_000),
  });
  const text = await response.text();
  if (response.status !== 202) throw new Error(`POST /api/v1/send/ answered ${response.status}: ${text}`);
  const body = JSON.parse(text) as { message_id: number; status: string };
  log(`accepted: message ${body.message_id} (${body.status}, request ${response.headers.get('x-request-id')})`);
  return body.message_id;
}

/** The message as notifyctl lists it: the newest message with an id below id + 1 is the message itself. */
function lookUp(s: Settings, messageId: number): Promise<ListedMessage | undefined> {
  const args = [s.notifyctl, 'messages', 'list', '--project', s.projectId, '--before', String(messageId + 1), '--limit', '1', '--json'];
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, args, { stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
    child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    child.once('error', reject);
    child.once('close', (code) => {
      if (code !== 0) return reject(new Error(`notifyctl messages list exited ${code}: ${stderr.trim()}`));
      const listed = (JSON.parse(stdout) as { messages?: ListedMessage[] }).messages ?? [];
      resolve(listed.find((message) => Number(message.id) === messageId));
    });
  });
}

async function main(): Promise<void> {
  const s = settings();
  const messageId = await send(s);
  const deadline = Date.now() + s.timeoutMs;
  let last = '';
  for (;;) {
    let message: ListedMessage | undefined;
    try {
      message = await lookUp(s, messageId);
    } catch (error) {
      // A NetworkPolicy enforcer admits this new pod's address a moment after it starts, so dispatch-svc may refuse
      // the first calls; anything else, or refusals until the deadline, fail the test.
      if (!/cannot reach/.test((error as Error).message) || Date.now() > deadline) throw error;
      await new Promise((resolve) => setTimeout(resolve, 1_000));
      continue;
    }
    const state = message?.state ?? 'not listed yet';
    if (state !== last) log(`message ${messageId}: ${state}`);
    last = state;
    if (message?.state === 'sent') return log(`sent: the relay answered ${message.lastSmtpReply ?? ''}`.trim());
    if (message?.state === 'failed') throw new Error(`message ${messageId} failed: ${message.failureReason || message.lastSmtpReply}`);
    if (Date.now() > deadline) throw new Error(`message ${messageId} was not sent within ${s.timeoutMs / 1000} s (last state: ${state})`);
    await new Promise((resolve) => setTimeout(resolve, 1_000));
  }
}

main().catch((error: unknown) => {
  process.stderr.write(`smoke test failed: ${error instanceof Error ? error.message : String(error)}\n`);
  process.exitCode = 1;
});
