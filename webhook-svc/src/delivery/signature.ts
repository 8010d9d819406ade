// Standard Webhooks signing (https://www.standardwebhooks.com): HMAC-SHA256 of `{id}.{timestamp}.{body}` keyed with
// the bytes after `whsec_` (base64), sent as `v1,<base64>`; while a rotated-out secret is still valid both sign,
// space-separated, so a receiver holding either verifies.
import { createHmac, createSecretKey, type KeyObject } from 'node:crypto';

/** What a Standard Webhooks secret starts with; the rest is the key, base64. */
export const secretPrefix = 'whsec_';

/**
 * Each secret's key object, made once: an HMAC keyed with raw bytes makes a new key object on every request (5 % of
 * the sender's CPU). At most `maxKeys` (an endpoint has one or two secrets at a time); past that the map starts over.
 */
const keys = new Map<string, KeyObject>();
const maxKeys = 1_000;

function keyOf(secret: string): KeyObject {
  let key = keys.get(secret);
  if (!key) {
    if (keys.size >= maxKeys) keys.clear();
    key = createSecretKey(Buffer.from(secret.startsWith(secretPrefix) ? secret.slice(secretPrefix.length) : secret, 'base64'));
    keys.set(secret, key);
  }
  return key;
}

/** The base64 signature of one request with one secret (`whsec_<base64>`). */
export function sign(secret: string, id: string, timestamp: number, body: string): string {
  return createHmac('sha256', keyOf(secret)).update(`${id}.${timestamp}.${body}`).digest('base64');
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
