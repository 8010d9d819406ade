// Notify is licensed under Apache-2.0 (LICENSE at the root): every package, the chart, the images and the OpenAPI
// document (checked by the contract suite) say so with its SPDX id, so that a scanner reading any one of them agrees.
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { test } from 'node:test';

const root = new URL('../../', import.meta.url);
const read = (path: string): string => readFileSync(new URL(path, root), 'utf8');

test('LICENSE is the Apache License 2.0 and every package.json, the chart and the images name Apache-2.0', () => {
  assert.match(read('LICENSE'), /^\s*Apache License\s+Version 2\.0, January 2004/);
  const workspaces = (JSON.parse(read('package.json')) as { workspaces: string[] }).workspaces;
  for (const path of ['package.json', ...workspaces.map((workspace) => `${workspace}/package.json`)]) {
    assert.equal((JSON.parse(read(path)) as { license?: string }).license, 'Apache-2.0', path);
  }
  assert.match(read('helm/notify/Chart.yaml'), /^ {2}artifacthub\.io\/license: Apache-2\.0$/m);
  assert.match(read('Dockerfile'), /org\.opencontainers\.image\.licenses="Apache-2\.0"/);
});
