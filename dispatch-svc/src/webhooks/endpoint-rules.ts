// What a webhook endpoint may be (docs/contract.md, "Webhooks"): its URL, the event types it subscribes to, and the
// shape of its signing secret. Shared by the operator's and the panel's calls so both refuse the same things.
import { randomBytes } from 'node:crypto';

export const webhookEventTypes = [
  'message.sent',
  'message.deferred',
  'message.failed',
  'message.bounced',
  'message.complained',
  'message.unsubscribed',
] as const;

export type WebhookEventType = (typeof webhookEventTypes)[number];

/** Longest URL accepted; the sender puts it on a request line, so it stays well under what servers take. */
const maxUrlLength = 2_000;

/** Faults of a URL, each a `url: ...` line; empty when it is acceptable. Plain http only when private targets are allowed. */
export function urlFaults(url: string, allowPrivate: boolean): string[] {
  if (url.length > maxUrlLength) return [`url: must be at most ${maxUrlLength} characters`];
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    return ['url: must be an absolute http(s) URL'];
  }
  if (parsed.protocol !== 'https:' && parsed.protocol !== 'http:') return ['url: must be an absolute http(s) URL'];
  // Credentials in the URL would be sent to the endpoint and shown to every operator who lists it.
  if (parsed.username !== '' || parsed.password !== '') return ['url: must not carry a user name or password'];
  if (parsed.protocol === 'http:' && !allowPrivate) return ['url: must use https (plain http is allowed only with NOTIFY_WEBHOOK_ALLOW_PRIVATE=true)'];
  return [];
}

/** The subscribed types, deduplicated in the contract's order (all six when none is given), or the faults. */
export function readEventTypes(given: readonly string[]): { types: WebhookEventType[]; faults: string[] } {
  const unknown = given.filter((type) => !(webhookEventTypes as readonly string[]).includes(type));
  if (unknown.length > 0)
    return { types: [], faults: unknown.map((type) => `event_types: unknown event type "${type}" (one of ${webhookEventTypes.join(', ')})`) };
  const types = given.length === 0 ? [...webhookEventTypes] : webhookEventTypes.filter((type) => given.includes(type));
  return { types, faults: [] };
}

/** A Standard Webhooks secret: `whsec_` and the base64 of 32 random bytes. */
export function newWebhookSecret(): string {
  return `whsec_${randomBytes(32).toString('base64')}`;
}
