// DKIM signing (RFC 6376) of a finished message, in one pass over its bytes: relaxed/relaxed canonicalization, RSA-SHA256,
// with a private key parsed once when it was fetched (dkim-keys.ts). The signature covers the listed header fields the
// message has (once each: the mailer writes each field once) and the whole body (no l= tag). The RSA operation, about
// a third of a millisecond, runs on libuv's thread pool, off the mailer's one JavaScript thread.
import { createHash, type KeyObject, sign } from 'node:crypto';
import { promisify } from 'node:util';

export interface SigningKey {
  readonly domainName: string;
  readonly keySelector: string;
  readonly privateKey: KeyObject;
}

const crlf = '\r\n';
/** crypto.sign with a callback: the signature is computed on the thread pool. */
const signOffThread = promisify(sign);

/** RFC 6376 3.4.4: runs of WSP become one space, WSP at the end of each line and empty lines at the end go. */
export function relaxedBody(body: string): string {
  const lines = body.split(crlf).map((line) => line.replace(/[ \t]+/g, ' ').replace(/ $/, ''));
  while (lines.length > 0 && lines.at(-1) === '') lines.pop();
  return lines.length === 0 ? '' : lines.join(crlf) + crlf;
}

/** RFC 6376 3.4.2: the name in lower case, the value unfolded, runs of WSP as one space, none around it. */
function relaxedHeader(name: string, value: string): string {
  return `${name.toLowerCase()}:${value
    .replace(/\r\n/g, '')
    .replace(/[ \t]+/g, ' ')
    .trim()}`;
}

/** The header fields of a header block (each with its folded continuation lines), by lower-case name. */
function headerFields(block: string): Map<string, { name: string; value: string }> {
  const fields = new Map<string, { name: string; value: string }>();
  for (const field of block.split(/\r\n(?![ \t])/)) {
    const colon = field.indexOf(':');
    if (colon <= 0) continue;
    const name = field.slice(0, colon).trim();
    fields.set(name.toLowerCase(), { name, value: field.slice(colon + 1) });
  }
  return fields;
}

/** Folds a base64 value into lines a header may hold. */
const folded = (value: string): string => value.replace(/.{1,72}/g, (part, offset: number) => (offset === 0 ? part : `${crlf} ${part}`));

/**
 * The message with a DKIM-Signature header field prepended, for `key`, over the fields of `fieldNames` that the
 * message has. `message` is the finished message as it will be sent: CRLF line ends, its header block ending in an
 * empty line.
 */
export async function signMessage(message: Buffer, key: SigningKey, fieldNames: readonly string[]): Promise<Buffer> {
  const split = message.indexOf('\r\n\r\n');
  if (split < 0) throw new Error('a message to sign has no end to its header');
  // latin1 maps each byte to one character and back, so the hashes see the message's exact bytes.
  const fields = headerFields(message.toString('latin1', 0, split));
  const bodyHash = createHash('sha256')
    .update(relaxedBody(message.toString('latin1', split + 4)), 'latin1')
    .digest('base64');
  const signed = fieldNames.filter((name) => fields.has(name.toLowerCase()));
  const tags = `v=1; a=rsa-sha256; c=relaxed/relaxed; d=${key.domainName}; s=${key.keySelector};${crlf} bh=${bodyHash};${crlf} h=${signed.join(':')}; b=`;
  const canonical = signed.map((name) => {
    const field = fields.get(name.toLowerCase()) as { name: string; value: string };
    return relaxedHeader(field.name, field.value) + crlf;
  });
  const hashed = Buffer.from(canonical.join('') + relaxedHeader('DKIM-Signature', tags), 'latin1');
  const signature = (await signOffThread('sha256', hashed, key.privateKey)).toString('base64');
  return Buffer.concat([Buffer.from(`DKIM-Signature: ${tags}${folded(signature)}${crlf}`, 'latin1'), message]);
}
