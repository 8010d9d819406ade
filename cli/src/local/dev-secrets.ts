// Tokens of a local stack, generated on first start and kept in `.data/dev-secrets.json` (gitignored, mode 600),
// so notifyctl commands pasted from an earlier run keep working.
import { randomBytes } from 'node:crypto';
import { mkdir, readFile, rename, writeFile } from 'node:fs/promises';
import { dirname } from 'node:path';

export interface DevSecrets {
  readonly internalToken: string;
  readonly adminToken: string;
}

const token = (): string => randomBytes(24).toString('base64url');

function isSecrets(value: unknown): value is DevSecrets {
  const candidate = value as Partial<DevSecrets> | null;
  return typeof candidate?.internalToken === 'string' && candidate.internalToken.length >= 16 && typeof candidate.adminToken === 'string' && candidate.adminToken.length >= 16;
}

/** Reads the kept tokens, or generates and keeps new ones when the file is missing or unusable. */
export async function loadDevSecrets(file: string): Promise<DevSecrets> {
  const text = await readFile(file, 'utf8').catch(() => undefined);
  if (text !== undefined) {
    try {
      const parsed: unknown = JSON.parse(text);
      if (isSecrets(parsed)) return { internalToken: parsed.internalToken, adminToken: parsed.adminToken };
    } catch {
      // Unreadable: replaced below, which is harmless since the services take whatever tokens they are started with.
    }
  }
  const secrets = { internalToken: token(), adminToken: token() };
  await mkdir(dirname(file), { recursive: true });
  const temporary = `${file}.${process.pid}.tmp`;
  await writeFile(temporary, `${JSON.stringify(secrets, null, 2)}\n`, { mode: 0o600 });
  await rename(temporary, file);
  return secrets;
}
