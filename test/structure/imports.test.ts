// Each workspace is a package with a front door: code reaches another package only by its name and its declared
// exports (`@notify/platform/nats`, `@notify/templating`), never by a relative path into its folder or a deep import
// of its `src/`. So a service's image holds the packages it declares and no other service, and a package's insides
// can move without breaking its users. Test support is one package too (`@notify/test/harness/...`): unit tests and
// their helpers (`src/testing/`) use it by name, and code that ships never does.
import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import { dirname, join, relative, resolve, sep } from 'node:path';
import { test } from 'node:test';
import { fileURLToPath } from 'node:url';

const root = fileURLToPath(new URL('../..', import.meta.url));
const workspaces = (JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')) as { workspaces: string[] }).workspaces;

function sources(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    if (entry.name === 'node_modules' || entry.name === 'generated' || entry.name.startsWith('.')) return [];
    const path = join(dir, entry.name);
    return entry.isDirectory() ? sources(path) : entry.name.endsWith('.ts') ? [path] : [];
  });
}

/** Every module specifier of a file: static, side-effect and dynamic imports, and re-exports. */
function specifiers(text: string): string[] {
  const found: string[] = [];
  for (const match of text.matchAll(
    /(?:^|\n)\s*(?:import|export)\s[^'"]*?from\s+['"]([^'"]+)['"]|(?:^|\n)\s*import\s+['"]([^'"]+)['"]|import\(\s*['"]([^'"]+)['"]\s*\)/g,
  )) {
    found.push((match[1] ?? match[2] ?? match[3]) as string);
  }
  return found;
}

/** A unit test, or a helper only unit tests use. */
function isTestCode(file: string): boolean {
  return file.endsWith('.test.ts') || file.split(sep).includes('testing');
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

/** Code outside the test package and outside tests that imports test support. */
function testSupportInProduction(): string[] {
  const found: string[] = [];
  for (const workspace of workspaces.filter((name) => name !== 'test')) {
    for (const file of sources(join(root, workspace)).filter((path) => !isTestCode(path))) {
      for (const specifier of specifiers(readFileSync(file, 'utf8'))) {
        if (specifier === '@notify/test' || specifier.startsWith('@notify/test/')) found.push(`${relative(root, file)} imports ${specifier}`);
      }
    }
  }
  return found;
}

test('no package reaches into another one by a relative path or a deep import of its src/', () => {
  assert.deepEqual(trespasses(), []);
});

test('test support is imported by tests and their helpers only, never by code that ships', () => {
  assert.deepEqual(testSupportInProduction(), []);
});

test('the check sees every kind of import', () => {
  assert.deepEqual(
    specifiers(
      "import { a } from '../../mailer-svc/src/x.ts';\nexport { b } from '@notify/mailer-svc/src/y.ts';\nimport '../../test/harness/w.ts';\nconst c = await import('./z.ts');",
    ),
    ['../../mailer-svc/src/x.ts', '@notify/mailer-svc/src/y.ts', '../../test/harness/w.ts', './z.ts'],
  );
  assert.ok(isTestCode(join('gateway', 'src', 'testing', 'serve-app.ts')));
  assert.ok(isTestCode(join('gateway', 'src', 'app.test.ts')));
  assert.ok(!isTestCode(join('gateway', 'src', 'app.ts')));
});
