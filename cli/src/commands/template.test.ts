// notifyctl template put's one-click unsubscribe flags, as the request they build.
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, test } from 'node:test';
import { resolve, run } from '../cli.ts';

const dir = mkdtempSync(join(tmpdir(), 'notifyctl-template-'));
after(() => rmSync(dir, { recursive: true, force: true }));
const html = join(dir, 'body.html');
const text = join(dir, 'body.txt');
writeFileSync(html, '<p>Hi</p>');
writeFileSync(text, 'Hi');
const put = ['template', 'put', '--project', '4', '--slug', 'news', '--subject', 'News', '--html-file', html, '--text-file', text];

async function requestOf(argv: string[]): Promise<Record<string, unknown>> {
  const invocation = await resolve(argv);
  assert.equal(invocation.kind, 'call');
  return invocation.kind === 'call' ? (invocation.prepared.request as Record<string, unknown>) : {};
}

describe('notifyctl template put --unsubscribe', () => {
  test('--unsubscribe asks for the headers, --no-unsubscribe for none, neither leaves the choice to the service', async () => {
    assert.equal((await requestOf([...put, '--unsubscribe'])).unsubscribe, true);
    assert.equal((await requestOf([...put, '--no-unsubscribe'])).unsubscribe, false);
    assert.equal('unsubscribe' in (await requestOf(put)), false);
  });

  test('both flags at once are a usage error', async () => {
    let stderr = '';
    const code = await run(
      [...put, '--unsubscribe', '--no-unsubscribe'],
      {
        stdout: () => undefined,
        stderr: (written) => {
          stderr += written;
        },
      },
      {},
    );
    assert.equal(code, 2);
    assert.equal(stderr, "notifyctl: give either --unsubscribe or --no-unsubscribe, not both\nRun 'notifyctl template put --help' for usage.\n");
  });

  test('the help names both flags', async () => {
    let stdout = '';
    await run(
      ['template', 'put', '--help'],
      {
        stdout: (written) => {
          stdout += written;
        },
        stderr: () => undefined,
      },
      {},
    );
    assert.match(stdout, /--unsubscribe/);
    assert.match(stdout, /--no-unsubscribe/);
  });
});
