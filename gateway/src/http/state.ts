// What the gateway's middleware share about one request, on `ctx.state`.
import type { Language } from '../i18n/messages.ts';

export interface GatewayState {
  /** The caller's X-Request-ID when sane, else a new UUID; echoed on the response and in 5xx bodies. */
  requestId: string;
  /** Language of every text in the response, from Accept-Language. */
  language: Language;
  /** The API key's id once auth-svc resolved it, for the access log (never the key itself). */
  keyId?: number;
  /** Route label for metrics and logs when the router did not name one (405 answers). */
  route?: string;
}
