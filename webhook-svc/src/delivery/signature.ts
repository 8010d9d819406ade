// Standard Webhooks signing (https://www.standardwebhooks.com): HMAC-SHA256 of `{id}.{timestamp}.{body}` keyed with
// the bytes after `whsec_` (base64), sent as `v1,<base64>`; while a rotated-out secret is still valid both sign,
// space-separated, so a receiver holding either verifies.
import { createHmac } from 'node:crypto';

const secretPrefix = 'whsec_';

/** The base64 signature of one request with one secret (`whsec_<base64>`). */
export function sign(secret: string, id: string, timestamp: number, body: string): string {
  const key = Buffer.from(secret.startsWith(secretPrefix) ? secret.slice(secretPrefix.length) : secret, 'base64');
  return createHmac('sha256', key).update(`${id}.${timestamp}.${body}`).digest('base64');
}

/** The three headers of one attempt, signed with every secret given (the current one first). */
export function signedHeaders(secrets: readonly string[], id: string, timestamp: number, body: string): Record<string, string> {
  return {
    'webhook-id': id,
    'webhook-timestamp': String(timestamp),
    'webhook-signature': secrets.map((secret) => `v1,${sign(secret, id, timestamp, body)}`).join(' '),
  };
}

/** The `webhook-id` of an event: the same on every attempt and every replay of it. */
export const webhookId = (eventId: number): string => `evt_${eventId}`;
