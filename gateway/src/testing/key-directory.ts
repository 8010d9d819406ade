// Test support: a key directory already loaded with the given prefixes, as the gateway's is once auth-svc answered.
import { Writable } from 'node:stream';
import { createLogger } from '@notify/platform';
import { KeyDirectory } from '../auth/key-directory.ts';

export async function loadedDirectory(prefixes: readonly string[] = []): Promise<KeyDirectory> {
  const logger = createLogger('key-directory', 'silent', new Writable({ write: (_chunk, _encoding, done) => done() }));
  const directory = new KeyDirectory({ list: async (after) => (after === '' ? prefixes : []), logger });
  await directory.reload();
  return directory;
}
