// What a newcomer reads first stays short (issue 50): the README and the benchmark reference within their lengths and
// without dated sections (history lives in git log), each service's main.ts a page, and the steps of a send each in a
// file of at most 200 lines. Function length is Biome's rule (biome.jsonc), run by `npm run lint`.
import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import { test } from 'node:test';

const root = new URL('../../', import.meta.url);
const lines = (path: string): string[] => readFileSync(new URL(path, root), 'utf8').trimEnd().split('\n');
const month = /\b(January|February|March|April|May|June|July|August|September|October|November|December)\b/;

test('README.md is at most 150 lines and docs/benchmark.md at most 400, neither with a dated heading', () => {
  for (const [path, limit] of [
    ['README.md', 150],
    ['docs/benchmark.md', 400],
  ] as const) {
    const text = lines(path);
    assert.ok(text.length <= limit, `${path} has ${text.length} lines, more than ${limit}`);
    assert.deepEqual(
      text.filter((line) => line.startsWith('#') && month.test(line)),
      [],
      `${path}: a dated heading`,
    );
  }
});

test("each service's main.ts is at most 60 lines", () => {
  for (const service of ['gateway', 'auth-svc', 'dispatch-svc', 'mailer-svc', 'webhook-svc', 'bounce-svc', 'cli']) {
    const count = lines(`${service}/src/main.ts`).length;
    assert.ok(count <= 60, `${service}/src/main.ts has ${count} lines`);
  }
});

test("no file of dispatch-svc's messages, where a send's steps live, is over 200 lines", () => {
  const folder = 'dispatch-svc/src/messages/';
  for (const file of readdirSync(new URL(folder, root)).filter((name) => name.endsWith('.ts') && !name.endsWith('.test.ts'))) {
    const count = lines(folder + file).length;
    assert.ok(count <= 200, `${folder}${file} has ${count} lines`);
  }
});
