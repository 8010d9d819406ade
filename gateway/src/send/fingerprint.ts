// The idempotency fingerprint: the same JSON in another key order or spacing is the same request (docs/contract.md, "Idempotency").
import { createHash } from 'node:crypto';

/**
 * JSON text with object keys sorted (by UTF-16 code units, as RFC 8785) at every level and no insignificant whitespace.
 * Written out directly rather than by rebuilding sorted objects, so a `__proto__` key is serialized as the data it is.
 */
export function canonicalJson(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(canonicalJson).join(',')}]`;
  if (value !== null && typeof value === 'object') {
    const members = Object.keys(value)
      .sort()
      .map((key) => `${JSON.stringify(key)}:${canonicalJson((value as Record<string, unknown>)[key])}`);
    return `{${members.join(',')}}`;
  }
  return JSON.stringify(value);
}

/** SHA-256 (hex) of the organization id and the canonical body: one key replayed for another organization does not match. */
export function sendFingerprint(body: unknown, organizationId: number): string {
  return createHash('sha256')
    .update(`${organizationId}\n${canonicalJson(body)}`)
    .digest('hex');
}

/**
 * A batch's fingerprint: like a send's, under its own prefix, so that a batch and a send never share one, and one
 * Idempotency-Key used for both is a mismatch (docs/integrators.md, "Batch sends").
 */
export function batchFingerprint(body: unknown, organizationId: number): string {
  return createHash('sha256')
    .update(`batch\n${organizationId}\n${canonicalJson(body)}`)
    .digest('hex');
}
