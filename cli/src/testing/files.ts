// Files the command tests hand to notifyctl's --*-file options, in a directory of their own removed after the file's tests.
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after } from 'node:test';

/** Returns a function that writes its content to a new file and returns the file's path. */
export function fileWriter(prefix: string): (content: string) => string {
  const dir = mkdtempSync(join(tmpdir(), `notifyctl-${prefix}-`));
  after(() => rmSync(dir, { recursive: true, force: true }));
  let count = 0;
  return (content) => {
    const path = join(dir, `${prefix}-${++count}`);
    writeFileSync(path, content);
    return path;
  };
}
