// notifyctl run in-process, as the command tests drive it: the exit code and what it wrote, or the request a command
// line resolves to without sending it.
import assert from 'node:assert/strict';
import { resolve, run } from '../cli.ts';

export async function notifyctl(argv: string[], env: Record<string, string> = {}): Promise<{ code: number; stdout: string; stderr: string }> {
  let stdout = '';
  let stderr = '';
  const code = await run(
    argv,
    {
      stdout: (text) => {
        stdout += text;
      },
      stderr: (text) => {
        stderr += text;
      },
    },
    env,
  );
  return { code, stdout, stderr };
}

export async function requestOf(argv: string[]): Promise<object> {
  const invocation = await resolve(argv);
  assert.equal(invocation.kind, 'call');
  return invocation.kind === 'call' ? invocation.prepared.request : {};
}
