// The API key format: `nk_<16 lowercase hex>.<secret>`, secret = 32 random bytes in base64url.
// The prefix is public and indexed; only SHA-256 of the secret is stored, so a database leak reveals no usable key.
import { hash, randomBytes, timingSafeEqual } from 'node:crypto';

export interface ParsedApiKey {
  /** `nk_` and 16 hex characters: the lookup handle, safe to show and log. */
  readonly prefix: string;
  readonly secret: string;
}

export interface GeneratedApiKey extends ParsedApiKey {
  /** `prefix.secret`, handed to the operator once. */
  readonly apiKey: string;
  readonly secretHash: Buffer;
}

const keyPattern = /^(nk_[0-9a-f]{16})\.([A-Za-z0-9_-]{43})$/;
// Longer input than any well-formed key is refused before the pattern even runs.
const keyLength = 'nk_'.length + 16 + 1 + 43;

/** Splits a presented key, or returns undefined when it is not in the issued format (it then never reaches the database). */
export function parseApiKey(apiKey: string): ParsedApiKey | undefined {
  if (apiKey.length !== keyLength) return undefined;
  const match = keyPattern.exec(apiKey);
  if (!match?.[1] || !match[2]) return undefined;
  return { prefix: match[1], secret: match[2] };
}

export function hashSecret(secret: string): Buffer {
  return hash('sha256', secret, 'buffer');
}

/** Constant-time comparison of the presented secret with the stored hash. */
export function secretMatches(secret: string, storedHash: Buffer): boolean {
  const presented = hashSecret(secret);
  return presented.length === storedHash.length && timingSafeEqual(presented, storedHash);
}

export function generateApiKey(): GeneratedApiKey {
  const prefix = `nk_${randomBytes(8).toString('hex')}`;
  const secret = randomBytes(32).toString('base64url');
  return { prefix, secret, apiKey: `${prefix}.${secret}`, secretHash: hashSecret(secret) };
}
