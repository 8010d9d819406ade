// After proto-loader-gen-types: one index.ts per package folder, so consumers import `auth.X` / `dispatch.X` types by name.
import { readdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

for (const dir of ['src/generated/notify/auth/v1', 'src/generated/notify/dispatch/v1', 'src/generated/notify/messaging/v1']) {
  const lines = readdirSync(dir)
    .filter((file) => file.endsWith('.ts') && file !== 'index.ts')
    .sort()
    .map((file) => `export type * from './${file}';`);
  writeFileSync(join(dir, 'index.ts'), `${lines.join('\n')}\n`);
}
