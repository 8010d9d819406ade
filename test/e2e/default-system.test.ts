// The end-to-end suites that need only a system with the default settings (test/e2e/default-system/*.suite.ts) share
// one, each in its own describe, one after another: a system start costs about 8 s of CPU on this project's 2-core
// machine. Each suite makes its own tenants, so none sees another's messages, keys or templates; a suite that kills or
// restarts a service leaves it serving, as it would have to for its own later tests. A suite also runs on its own
// system: `node --test test/e2e/default-system/<name>.suite.ts`.
import { readdirSync } from 'node:fs';
import { after, describe } from 'node:test';
import { shareDefaultSystem } from '../harness/system.ts';

after(shareDefaultSystem());

const folder = new URL('./default-system/', import.meta.url);
for (const file of readdirSync(folder)
  .filter((name) => name.endsWith('.suite.ts'))
  .sort()) {
  describe(file.replace(/\.suite\.ts$/, ''), async () => {
    await import(new URL(file, folder).href);
  });
}
