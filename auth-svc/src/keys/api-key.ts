// The API key format: `nk_<16 lowercase hex>.<secret>`, secret = 32 random bytes in base64url; a test key's prefix is
// `nk_test_<16 lowercase hex>`, so that anyone reading it (in code, a log, the panel) sees that it never mails.
// The prefix is public and indexed; only SHA-256 of the secret is stored, so a database leak reveals no usable key.
import { hash, randomBytes, timingSafeEqual } from 'node:crypto';

export interface ParsedApiKey {
  /** `nk_` (or `nk_test_`) and 16 hex characters: the lookup handle, safe to show and log. */
  readonly prefix: string;
  readonly secret: string;
}

export interface GeneratedApiKey extends ParsedApiKey {
  /** `prefix.secret`, handed to the operator once. */
  readonly apiKey: string;
  readonly secretHash: Buffer;
}

const livePrefix = 'nk_';
const testPrefix = 'nk_test_';
const keyPattern = /^(nk_(?:test_)?[0-9a-f]{16})\.([A-Za-z0-9_-]{43})$/;
// Input of another length than a well-formed key is refused before the pattern even runs.
const keyLengths = new Set([livePrefix, testPrefix].map((start) => start.length + 16 + 1 + 43));

/** Whether a key's public prefix is a test key's. */
export function isTestPrefix(prefix: string): boolean {
  return prefix.startsWith(testPrefix);
}

/** Splits a presented key, or returns undefined when it is not in the issued format (it then never reaches the database). */
export function parseApiKey(apiKey: string): ParsedApiKey | undefined {
  if (!keyLengths.has(apiKey.length)) return undefined;
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

export function generateApiKey(options: { test?: boolean } = {}): GeneratedApiKey {
  const prefix = `${options.test ? testPrefix : livePrefix}${randomBytes(8).toString('hex')}`;
  const secret = randomBytes(32).toString('base64url');
  return { prefix, secret, apiKey: `${prefix}.${secret}`, secretHash: hashSecret(secret) };
}
