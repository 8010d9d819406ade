// Check 2 before any call: the Authorization header must read `Api-Key <key>`, the scheme spelled exactly so (seed, §5).
import type { MessageKey } from '../i18n/messages.ts';

export type ParsedAuthorization = { ok: true; apiKey: string } | { ok: false; reason: Extract<MessageKey, `auth.${string}`> };

/** Longest key accepted; generated keys are far shorter, so anything longer is not worth a call to auth-svc. */
export const maxApiKeyLength = 512;

// RFC 9110 token68: the credential syntax of an auth scheme. auth-svc judges the rest (UNAUTHENTICATED for malformed keys).
const token68 = /^[A-Za-z0-9._~+/-]+=*$/;

export function parseAuthorization(header: string | undefined): ParsedAuthorization {
  if (header === undefined || header.trim() === '') return { ok: false, reason: 'auth.missing' };
  const match = /^Api-Key(?: +(.*))?$/.exec(header);
  // Another scheme (Bearer, Basic, `api-key`...) or a bare key without the prefix.
  if (!match) return { ok: false, reason: 'auth.scheme' };
  const apiKey = match[1]?.trim() ?? '';
  if (apiKey === '') return { ok: false, reason: 'auth.scheme' };
  if (apiKey.length > maxApiKeyLength || !token68.test(apiKey)) return { ok: false, reason: 'auth.invalid' };
  return { ok: true, apiKey };
}
