// Secrets of a local stack, generated on first start and kept in `.data/dev-secrets.json` (gitignored, mode 600),
// so notifyctl commands pasted from an earlier run keep working, and return paths, unsubscribe links and sealed DKIM
// keys made by an earlier run still verify and open. A file from before a secret existed gets it added.
import { randomBytes } from 'node:crypto';
import { mkdir, readFile, rename, writeFile } from 'node:fs/promises';
import { dirname } from 'node:path';

/** One bearer token per calling component (see GrpcServer's callers). */
const tokenNames = ['gatewayToken', 'mailerToken', 'bounceToken', 'adminToken'] as const;

export interface DevSecrets extends Readonly<Record<(typeof tokenNames)[number], string>> {
  /** NOTIFY_DATA_KEY: 32 random bytes, base64. */
  readonly dataKey: string;
}

const token = (): string => randomBytes(24).toString('base64url');
const dataKey = (): string => randomBytes(32).toString('base64');

const isToken = (value: unknown): value is string => typeof value === 'string' && value.length >= 16;
const isDataKey = (value: unknown): value is string => typeof value === 'string' && /^[A-Za-z0-9+/]{43}=$/.test(value);

async function keep(file: string, secrets: DevSecrets): Promise<void> {
  await mkdir(dirname(file), { recursive: true });
  const temporary = `${file}.${process.pid}.tmp`;
  await writeFile(temporary, `${JSON.stringify(secrets, null, 2)}\n`, { mode: 0o600 });
  await rename(temporary, file);
}

/**
 * Reads the kept secrets; generates and keeps any that are missing or unusable (every one when the file is missing
 * or unreadable). Tokens are replaced as a set (a file from before per-caller tokens gets all four), since the services
 * take whatever tokens they are started with.
 */
export async function loadDevSecrets(file: string): Promise<DevSecrets> {
  const text = await readFile(file, 'utf8').catch(() => undefined);
  let kept: Partial<Record<keyof DevSecrets, unknown>> = {};
  if (text !== undefined) {
    try {
      const parsed: unknown = JSON.parse(text);
      if (typeof parsed === 'object' && parsed !== null) kept = parsed as typeof kept;
    } catch {
      // Unreadable: replaced below.
    }
  }
  const keepTokens = tokenNames.every((name) => isToken(kept[name]));
  const tokens = Object.fromEntries(tokenNames.map((name) => [name, keepTokens ? (kept[name] as string) : token()])) as Record<
    (typeof tokenNames)[number],
    string
  >;
  const secrets: DevSecrets = { ...tokens, dataKey: isDataKey(kept.dataKey) ? kept.dataKey : dataKey() };
  if (!keepTokens || secrets.dataKey !== kept.dataKey) await keep(file, secrets);
  return secrets;
}
