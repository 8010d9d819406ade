import { silentLogger } from '@notify/test/harness/logger.ts';
// Test support: a key directory already loaded with the given prefixes, as the gateway's is once auth-svc answered.
import { KeyDirectory } from '../auth/key-directory.ts';

export async function loadedDirectory(prefixes: readonly string[] = []): Promise<KeyDirectory> {
  const directory = new KeyDirectory({ list: async (after) => (after === '' ? prefixes : []), logger: silentLogger('key-directory') });
  await directory.reload();
  return directory;
}
