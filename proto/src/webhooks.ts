// What a webhook endpoint may be (docs/contract.md, "Webhooks"), for every component that judges one: dispatch-svc
// stores endpoints, the gateway judges the public API's bodies and the panel's form lists the types.

/** The event types an endpoint subscribes to, in the contract's order. */
export const webhookEventTypes = [
  'message.sent',
  'message.deferred',
  'message.failed',
  'message.bounced',
  'message.complained',
  'message.unsubscribed',
] as const;

export type WebhookEventType = (typeof webhookEventTypes)[number];

/** The event `POST /api/v1/webhooks/{id}/test` sends to one endpoint, whatever it subscribes to; never subscribable. */
export const webhookTestEventType = 'webhook.test';

/** Longest URL accepted; the sender puts it on a request line, so it stays well under what servers take. */
export const maxWebhookUrlLength = 2_000;

/** Why a URL is refused: too long, not an absolute http(s) URL, carrying credentials, or plain http where only https goes. */
export type WebhookUrlRefusal = 'too_long' | 'not_http_url' | 'credentials' | 'https_required';

/** Why `url` may not be an endpoint's, or undefined when it may; plain http only when private targets are allowed. */
export function webhookUrlRefusal(url: string, allowPrivate: boolean): WebhookUrlRefusal | undefined {
  if (url.length > maxWebhookUrlLength) return 'too_long';
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    return 'not_http_url';
  }
  if (parsed.protocol !== 'https:' && parsed.protocol !== 'http:') return 'not_http_url';
  // Credentials in the URL would be sent to the endpoint and shown to everyone who lists it.
  if (parsed.username !== '' || parsed.password !== '') return 'credentials';
  if (parsed.protocol === 'http:' && !allowPrivate) return 'https_required';
  return undefined;
}
