// DKIM key pairs (RFC 6376): RSA 2048, the private key as PKCS#8 PEM (what nodemailer signs with), the public key as
// the base64 SubjectPublicKeyInfo a TXT record publishes. Also the names and syntax rules of domains and selectors.
import { generateKeyPair } from 'node:crypto';
import { promisify } from 'node:util';

const generate = promisify(generateKeyPair);

export const defaultSelector = 'notify';
const selectorPattern = /^[a-z0-9-]{1,63}$/;
// Letters, digits and hyphens, labels of at most 63, at least two labels, a top-level label that is not all digits.
const domainPattern = /^(?=.{1,253}$)([a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?\.)+[a-z]([a-z0-9-]{0,61}[a-z0-9])?$/;

/** A domain as stored and compared: lower case, without a trailing dot. */
export const normalizeDomain = (domain: string): string => domain.trim().toLowerCase().replace(/\.$/, '');
export const isDomain = (domain: string): boolean => domainPattern.test(domain);
export const isSelector = (selector: string): boolean => selectorPattern.test(selector);

/** The TXT record the domain's owner publishes. */
export function dnsRecord(domain: string, selector: string, publicKey: string): { name: string; value: string } {
  return { name: `${selector}._domainkey.${domain}`, value: `v=DKIM1; k=rsa; p=${publicKey}` };
}

export interface DkimKeyPair {
  /** PKCS#8 PEM. */
  readonly privateKeyPem: string;
  /** Base64 DER SubjectPublicKeyInfo. */
  readonly publicKey: string;
}

/** A fresh RSA 2048 key pair, generated off the event loop. */
export async function generateDkimKeyPair(): Promise<DkimKeyPair> {
  const { privateKey, publicKey } = await generate('rsa', {
    modulusLength: 2048,
    publicKeyEncoding: { type: 'spki', format: 'der' },
    privateKeyEncoding: { type: 'pkcs8', format: 'pem' },
  });
  return { privateKeyPem: privateKey, publicKey: publicKey.toString('base64') };
}
