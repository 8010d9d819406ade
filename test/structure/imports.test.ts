// Each workspace is a package with a front door: code reaches another package only by its name and its declared
// exports (`@notify/platform/nats`, `@notify/templating`), never by a relative path into its folder or a deep import
// of its `src/`. So a service's image holds the packages it declares and no other service, and a package's insides
// can move without breaking its users.
import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import { dirname, join, relative, resolve, sep } from 'node:path';
import { fileURLToPath } from 'node:url';
import { test } from 'node:test';

const root = fileURLToPath(new URL('../..', import.meta.url));
const workspaces = (JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')) as { workspaces: string[] }).workspaces;

function sources(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    if (entry.name === 'node_modules' || entry.name === 'generated' || entry.name.startsWith('.')) return [];
    const path = join(dir, entry.name);
    return entry.isDirectory() ? sources(path) : entry.name.endsWith('.ts') ? [path] : [];
  });
}

/** Every module specifier of a file: static and dynamic imports, and re-exports. */
function specifiers(text: string): string[] {
  const found: string[] = [];
  for (const match of text.matchAll(/(?:^|\n)\s*(?:import|export)\s[^'"]*?from\s+['"]([^'"]+)['"]|import\(\s*['"]([^'"]+)['"]\s*\)/g)) found.push((match[1] ?? match[2]) as string);
  return found;
}

/** What crosses into another workspace other than by its package name and exports. */
function trespasses(): string[] {
  const found: string[] = [];
  for (const workspace of workspaces) {
    for (const file of sources(join(root, workspace))) {
      for (const specifier of specifiers(readFileSync(file, 'utf8'))) {
        const where = `${relative(root, file)} imports ${specifier}`;
        if (specifier.startsWith('.')) {
          const target = relative(root, resolve(dirname(file), specifier));
          if (target.split(sep)[0] !== workspace) found.push(where);
        } else if (/^@notify\/[^/]+\/src\//.test(specifier)) {
          found.push(where);
        }
      }
    }
  }
  return found;
}

test('no package reaches into another one by a relative path or a deep import of its src/', () => {
  assert.deepEqual(trespasses(), []);
});

test('the check sees both kinds of trespass', () => {
  assert.deepEqual(specifiers("import { a } from '../../mailer-svc/src/x.ts';\nexport { b } from '@notify/mailer-svc/src/y.ts';\nconst c = await import('./z.ts');"), ['../../mailer-svc/src/x.ts', '@notify/mailer-svc/src/y.ts', './z.ts']);
});
