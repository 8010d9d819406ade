// What the gateway's authorization cache is keyed and checked by. Entries are keyed by the key's public prefix, which
// is what auth-svc names when it revokes a key; a prefix has one secret and its key one organization, so one accepted
// answer per prefix is all there can be. Each entry keeps a SHA-256 digest of the presented key and organization (the
// raw key is never stored), and only a request with the same digest is answered from it.
import { hash } from 'node:crypto';

// The issued form `nk_<16 hex>.<secret>` (`nk_test_<16 hex>.<secret>` for a test key): the prefix is what auth-svc
// publishes when the key is revoked or its rate changes.
const issuedKey = /^(nk_(?:test_)?[0-9a-f]{16})\./;

/** The public prefix of an API key in the issued form, or undefined: such a key could never be invalidated, so it is never cached. */
export function apiKeyPrefix(apiKey: string): string | undefined {
  return issuedKey.exec(apiKey)?.[1];
}

/** One digest of both, so an entry reveals neither the key nor which organization it was asked for. */
export function requestDigest(apiKey: string, organizationId: number): string {
  return hash('sha256', `${organizationId}:${apiKey}`, 'base64url');
}
