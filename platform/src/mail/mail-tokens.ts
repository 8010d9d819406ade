// The two signed tokens a mail carries, so that what comes back about it can be trusted without a lookup:
// - the VERP return path `bounces+<token>@<bounce domain>`: the token names the message and is signed, so a bounce or
//   complaint report can be tied to it and a forged or guessed one is refused. Lowercase base32 (local parts are often
//   case-folded on the way back), 29 characters: 8 bytes of message id and 10 of HMAC (80 bits).
// - the unsubscribe token of RFC 8058 links: names the project, the address and the message it came with, signed
//   (128 bits), so it stays valid after the message itself is gone and cannot be turned to another address or project.
import type { DataKey } from './data-key.ts';

const base32Alphabet = 'abcdefghijklmnopqrstuvwxyz234567';
const verpMacBytes = 10;
const unsubscribeMacBytes = 16;
const verpLocalPrefix = 'bounces+';

function base32(bytes: Buffer): string {
  let bits = 0;
  let value = 0;
  let out = '';
  for (const byte of bytes) {
    value = (value << 8) | byte;
    bits += 8;
    while (bits >= 5) {
      out += base32Alphabet[(value >>> (bits - 5)) & 31];
      bits -= 5;
    }
  }
  if (bits > 0) out += base32Alphabet[(value << (5 - bits)) & 31];
  return out;
}

function fromBase32(text: string): Buffer | undefined {
  let bits = 0;
  let value = 0;
  const out: number[] = [];
  for (const char of text) {
    const index = base32Alphabet.indexOf(char);
    if (index < 0) return undefined;
    value = (value << 5) | index;
    bits += 5;
    if (bits >= 8) {
      out.push((value >>> (bits - 8)) & 255);
      bits -= 8;
    }
  }
  return Buffer.from(out);
}

function idBytes(id: number): Buffer {
  const bytes = Buffer.alloc(8);
  bytes.writeBigUInt64BE(BigInt(id));
  return bytes;
}

/** Equal-time comparison of two MACs of the same length. */
function sameMac(a: Buffer, b: Buffer): boolean {
  let difference = a.length ^ b.length;
  for (let i = 0; i < Math.min(a.length, b.length); i += 1) difference |= a[i]! ^ b[i]!;
  return difference === 0;
}

export function verpToken(key: DataKey, messageId: number): string {
  const id = idBytes(messageId);
  return base32(Buffer.concat([id, key.sign('verp', id).subarray(0, verpMacBytes)]));
}

/** The message a VERP token names, or undefined when it is malformed or its signature does not verify. */
export function readVerpToken(key: DataKey, token: string): number | undefined {
  const bytes = fromBase32(token.toLowerCase());
  if (!bytes || bytes.length !== 8 + verpMacBytes) return undefined;
  const id = bytes.subarray(0, 8);
  if (!sameMac(bytes.subarray(8), key.sign('verp', id).subarray(0, verpMacBytes))) return undefined;
  const messageId = Number(id.readBigUInt64BE());
  return Number.isSafeInteger(messageId) && messageId > 0 ? messageId : undefined;
}

/** The envelope sender (MAIL FROM) of a message: where its bounces come back. */
export function returnPathFor(key: DataKey, messageId: number, bounceDomain: string): string {
  return `${verpLocalPrefix}${verpToken(key, messageId)}@${bounceDomain}`;
}

/**
 * The message named by a return path of ours at `bounceDomain` (local part and domain compared case-insensitively),
 * or undefined for any other address, a malformed token or a forged one.
 */
export function readReturnPath(key: DataKey, address: string, bounceDomain: string): number | undefined {
  const at = address.lastIndexOf('@');
  if (at < 0 || address.slice(at + 1).toLowerCase() !== bounceDomain.toLowerCase()) return undefined;
  const local = address.slice(0, at).toLowerCase();
  if (!local.startsWith(verpLocalPrefix)) return undefined;
  return readVerpToken(key, local.slice(verpLocalPrefix.length));
}

export interface UnsubscribeClaim {
  readonly projectId: number;
  readonly messageId: number;
  /** The recipient, exactly as the message had it. */
  readonly address: string;
}

export function unsubscribeToken(key: DataKey, claim: UnsubscribeClaim): string {
  const payload = Buffer.concat([idBytes(claim.projectId), idBytes(claim.messageId), Buffer.from(claim.address, 'utf8')]);
  return Buffer.concat([payload, key.sign('unsubscribe', payload).subarray(0, unsubscribeMacBytes)]).toString('base64url');
}

/** What an unsubscribe token claims, or undefined when it is malformed or its signature does not verify. */
export function readUnsubscribeToken(key: DataKey, token: string): UnsubscribeClaim | undefined {
  if (!/^[A-Za-z0-9_-]{1,2048}$/.test(token)) return undefined;
  const bytes = Buffer.from(token, 'base64url');
  if (bytes.length <= 16 + unsubscribeMacBytes) return undefined;
  const payload = bytes.subarray(0, bytes.length - unsubscribeMacBytes);
  if (!sameMac(bytes.subarray(payload.length), key.sign('unsubscribe', payload).subarray(0, unsubscribeMacBytes))) return undefined;
  const projectId = Number(payload.readBigUInt64BE(0));
  const messageId = Number(payload.readBigUInt64BE(8));
  if (!Number.isSafeInteger(projectId) || !Number.isSafeInteger(messageId)) return undefined;
  return { projectId, messageId, address: payload.subarray(16).toString('utf8') };
}
