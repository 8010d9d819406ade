// Verifying a Standard Webhooks signature (docs/contract.md, "Webhooks"), as an integrator's receiver would:
// `webhook-signature` holds space-separated `v1,<base64>` entries, each an HMAC-SHA256 of "{id}.{timestamp}.{body}"
// under the base64 key after `whsec_`; one match is enough (after a rotation two secrets sign).
import { createHmac, timingSafeEqual } from 'node:crypto';

/** How far the timestamp may be from the receiver's clock, as the specification recommends (replay protection). */
export const timestampToleranceSeconds = 300;

export interface SignedRequest {
  readonly id: string | undefined;
  readonly timestamp: string | undefined;
  readonly signature: string | undefined;
  readonly body: Buffer;
}

export type Verification = { readonly ok: true } | { readonly ok: false; readonly problem: string };

/** The key a `whsec_<base64>` secret stands for, or undefined when it is not one. */
export function secretKey(secret: string): Buffer | undefined {
  if (!secret.startsWith('whsec_')) return undefined;
  const encoded = secret.slice('whsec_'.length);
  if (!/^[A-Za-z0-9+/]+={0,2}$/.test(encoded)) return undefined;
  const key = Buffer.from(encoded, 'base64');
  return key.length > 0 ? key : undefined;
}

export function verifySignature(key: Buffer, request: SignedRequest, nowSeconds: number): Verification {
  if (!request.id || !request.timestamp || !request.signature) return { ok: false, problem: 'missing webhook-id, webhook-timestamp or webhook-signature' };
  if (!/^\d+$/.test(request.timestamp)) return { ok: false, problem: 'webhook-timestamp is not Unix seconds' };
  if (Math.abs(nowSeconds - Number(request.timestamp)) > timestampToleranceSeconds)
    return { ok: false, problem: 'webhook-timestamp is more than 5 minutes away' };
  const expected = createHmac('sha256', key).update(`${request.id}.${request.timestamp}.`).update(request.body).digest();
  for (const entry of request.signature.split(' ')) {
    const [version, encoded] = entry.split(',', 2);
    if (version !== 'v1' || encoded === undefined) continue;
    const given = Buffer.from(encoded, 'base64');
    if (given.length === expected.length && timingSafeEqual(given, expected)) return { ok: true };
  }
  return { ok: false, problem: 'no v1 signature matches the secret' };
}
