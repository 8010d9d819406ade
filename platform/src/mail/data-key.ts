// NOTIFY_DATA_KEY: the one secret behind everything Notify seals or signs for itself. Each use gets its own key,
// derived with HKDF-SHA256 under a purpose label, so a value made for one use never verifies or opens as another:
// DKIM private keys, projects' relay lists and webhook signing secrets are sealed with AES-256-GCM (what they belong
// to as associated data), VERP return paths, unsubscribe links and erased recipients' addresses are signed with
// HMAC-SHA256. The secret comes from the environment or a mounted file and is never printed.
import { createCipheriv, createDecipheriv, createHmac, createSecretKey, hkdfSync, randomBytes } from 'node:crypto';
import { custom, text } from '../config.ts';

export type DataKeyPurpose = 'seal' | 'verp' | 'unsubscribe' | 'erasure';

export interface DataKey {
  /** AES-256-GCM: `v1.<iv>.<ciphertext and tag>` (base64url); `context` must be given again to open it. */
  seal(plaintext: string, context: string): string;
  /** Throws when the value was not sealed by this key for this context, or was altered. */
  open(sealed: string, context: string): string;
  /** HMAC-SHA256 of `data` under the purpose's key. */
  sign(purpose: Exclude<DataKeyPurpose, 'seal'>, data: Buffer): Buffer;
}

const minimumBytes = 32;

/** Reads NOTIFY_DATA_KEY's value: at least 32 random bytes, base64 or hex (`openssl rand -base64 32`). */
export function parseDataKey(raw: string): DataKey {
  const material = /^[0-9a-f]+$/i.test(raw) && raw.length % 2 === 0 ? Buffer.from(raw, 'hex') : Buffer.from(raw, 'base64');
  if (material.length < minimumBytes) throw new Error(`must hold at least ${minimumBytes} random bytes, base64 or hex (openssl rand -base64 32)`);
  return createDataKey(material);
}

export function createDataKey(material: Buffer): DataKey {
  // KeyObjects, made once: given raw bytes, Node 24 builds a KeyObject inside every createHmac/createCipheriv, which
  // made signing a return path cost more than five times the HMAC itself (once per mail in the mailer).
  const derived = (purpose: DataKeyPurpose) => createSecretKey(Buffer.from(hkdfSync('sha256', material, Buffer.alloc(0), `notify ${purpose} v1`, 32)));
  const keys = { seal: derived('seal'), verp: derived('verp'), unsubscribe: derived('unsubscribe'), erasure: derived('erasure') };
  return {
    seal(plaintext, context) {
      const iv = randomBytes(12);
      const cipher = createCipheriv('aes-256-gcm', keys.seal, iv);
      cipher.setAAD(Buffer.from(context));
      const body = Buffer.concat([cipher.update(plaintext, 'utf8'), cipher.final(), cipher.getAuthTag()]);
      return `v1.${iv.toString('base64url')}.${body.toString('base64url')}`;
    },
    open(sealed, context) {
      const [version, iv, body] = sealed.split('.');
      if (version !== 'v1' || !iv || !body) throw new Error('not a sealed value');
      const bytes = Buffer.from(body, 'base64url');
      const decipher = createDecipheriv('aes-256-gcm', keys.seal, Buffer.from(iv, 'base64url'));
      decipher.setAAD(Buffer.from(context));
      decipher.setAuthTag(bytes.subarray(bytes.length - 16));
      return Buffer.concat([decipher.update(bytes.subarray(0, bytes.length - 16)), decipher.final()]).toString('utf8');
    },
    sign: (purpose, data) => createHmac('sha256', keys[purpose]).update(data).digest(),
  };
}

/**
 * The context a webhook endpoint's signing secrets (current and previous) are sealed under: a sealed secret copied to
 * another endpoint's row does not open there. dispatch-svc seals them, only webhook-svc opens them.
 */
export const webhookSecretSealContext = (endpointId: number): string => `webhook-secret:${endpointId}`;

/** The setting, spread into the spec of each service that seals, opens or signs (dispatch-svc, mailer-svc, bounce-svc, webhook-svc). */
export const dataKeySetting = {
  dataKey: custom(
    'NOTIFY_DATA_KEY',
    {
      description:
        'at least 32 random bytes, base64 or hex: seals DKIM private keys, relay lists and webhook secrets, and signs return paths, unsubscribe links and erased addresses (`openssl rand -base64 32`)',
      secret: true,
    },
    parseDataKey,
  ),
};

/** BOUNCE_DOMAIN: where bounces and complaints come back, read by the mailers (return paths) and bounce-svc. */
export const bounceDomainSetting = {
  bounceDomain: text('BOUNCE_DOMAIN', {
    description: 'domain of the VERP return paths (`bounces+<token>@<domain>`); its MX must point at bounce-svc',
    default: 'bounces.notify.localhost',
    pattern: /^(?=.{1,253}$)([a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?\.)+[a-z0-9-]{2,63}$/i,
  }),
};
