// Panel passwords: scrypt (memory-hard, from Node's crypto) with a random salt per user. Each hash is stored with the
// parameters it was made with, so the parameters can be raised later: old hashes still verify, and are upgraded at the
// next successful sign-in.
import { randomBytes, scrypt, timingSafeEqual } from 'node:crypto';

export interface ScryptParameters {
  /** CPU/memory cost, a power of two. */
  readonly n: number;
  /** Block size. */
  readonly r: number;
  /** Parallelization (computed one after the other by OpenSSL: more time, not more memory). */
  readonly p: number;
}

export interface PasswordHash extends ScryptParameters {
  readonly hash: Buffer;
  readonly salt: Buffer;
}

/**
 * OWASP's scrypt settings for 32 MiB per hash (N=2^15, r=8, p=3): as costly to guess as N=2^17 with p=1, with a
 * quarter of the memory, which matters when several sign-ins are hashed at once. About 0.3 s of one core.
 */
export const currentParameters: ScryptParameters = { n: 2 ** 15, r: 8, p: 3 };

const hashBytes = 32;
const saltBytes = 16;

/** Passwords are chosen by people and typed by them: long enough to resist guessing, short enough to hash cheaply. */
export const passwordLength = { min: 12, max: 1024 } as const;

/** What is wrong with `password` as a new panel password, or undefined when it is acceptable. */
export function passwordProblem(password: string): string | undefined {
  const length = [...password].length;
  if (length < passwordLength.min) return `must be at least ${passwordLength.min} characters`;
  if (length > passwordLength.max) return `must be at most ${passwordLength.max} characters`;
  return undefined;
}

function derive(password: string, salt: Buffer, parameters: ScryptParameters): Promise<Buffer> {
  const { n: N, r, p } = parameters;
  return new Promise((resolve, reject) => {
    // scrypt needs 128 * N * r bytes; OpenSSL's default ceiling (32 MiB) is just below what the current parameters use.
    scrypt(password.normalize('NFC'), salt, hashBytes, { N, r, p, maxmem: 256 * N * r }, (error, key) => (error ? reject(error) : resolve(key)));
  });
}

export async function hashPassword(password: string, parameters: ScryptParameters = currentParameters): Promise<PasswordHash> {
  const salt = randomBytes(saltBytes);
  return { ...parameters, salt, hash: await derive(password, salt, parameters) };
}

/** Constant-time comparison of `password` with a stored hash, using the parameters that hash was made with. */
export async function passwordMatches(password: string, stored: PasswordHash): Promise<boolean> {
  const presented = await derive(password, stored.salt, stored);
  return presented.length === stored.hash.length && timingSafeEqual(presented, stored.hash);
}

/** True when `stored` was made with weaker parameters than the current ones. */
export function needsRehash(stored: ScryptParameters): boolean {
  return stored.n < currentParameters.n || stored.r < currentParameters.r || stored.p < currentParameters.p;
}
