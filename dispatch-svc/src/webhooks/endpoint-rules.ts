// What a webhook endpoint may be (docs/contract.md, "Webhooks"): its URL, the event types it subscribes to (the rules
// themselves in @notify/proto, which the gateway judges the public API with), and the shape of its signing secret, in
// the words of the operator's and the panel's calls, so every caller is refused the same things.
import { randomBytes } from 'node:crypto';
import { maxWebhookUrlLength, type WebhookEventType, type WebhookUrlRefusal, webhookEventTypes, webhookUrlRefusal } from '@notify/proto';

const refusalTexts: Record<WebhookUrlRefusal, string> = {
  too_long: `url: must be at most ${maxWebhookUrlLength} characters`,
  not_http_url: 'url: must be an absolute http(s) URL',
  credentials: 'url: must not carry a user name or password',
  https_required: 'url: must use https (plain http is allowed only with NOTIFY_WEBHOOK_ALLOW_PRIVATE=true)',
};

/** Faults of a URL, each a `url: ...` line; empty when it is acceptable. Plain http only when private targets are allowed. */
export function urlFaults(url: string, allowPrivate: boolean): string[] {
  const refusal = webhookUrlRefusal(url, allowPrivate);
  return refusal ? [refusalTexts[refusal]] : [];
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
