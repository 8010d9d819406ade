import assert from 'node:assert/strict';
import { Readable } from 'node:stream';
import { test } from 'node:test';
import { parseFlags, UsageError } from '../args.ts';
import { resolve, run } from '../cli.ts';
import { fileWriter } from '../testing/files.ts';
import { readPassword } from './panel-user.ts';

const passwordFile = fileWriter('password');

test('create reads the password from the first line of --password-file, without its line break', async () => {
  const invocation = await resolve([
    'panel-user',
    'create',
    '--org',
    '3',
    '--email',
    'ana@example.com',
    '--role',
    'operator',
    '--password-file',
    passwordFile('a long enough password\nignored\n'),
  ]);
  assert.equal(invocation.kind, 'call');
  assert.deepEqual(invocation.kind === 'call' ? invocation.prepared.request : {}, {
    organizationId: 3,
    email: 'ana@example.com',
    role: 'operator',
    password: 'a long enough password',
  });
});

test('a password is never accepted on the command line', async () => {
  let stderr = '';
  const code = await run(
    ['panel-user', 'create', '--org', '3', '--email', 'a@example.com', '--role', 'viewer', '--password', 'visible in ps'],
    {
      stdout: () => undefined,
      stderr: (text) => {
        stderr += text;
      },
    },
    {},
  );
  assert.equal(code, 2);
  assert.match(stderr, /unknown option '--password'/);
  assert.doesNotMatch(stderr, /visible in ps/);
});

test('without a file the password is read from standard input, and an empty one is refused', async () => {
  const flags = parseFlags('panel-user create', [], {});
  assert.equal(await readPassword(flags, Readable.from(['piped password 1\n'])), 'piped password 1');
  await assert.rejects(readPassword(flags, Readable.from(['\n'])), UsageError);
});

test('the role must be viewer or operator', async () => {
  await assert.rejects(
    resolve(['panel-user', 'create', '--org', '3', '--email', 'a@example.com', '--role', 'admin', '--password-file', passwordFile('x')]),
    (error: unknown) => error instanceof UsageError && /--role must be one of viewer, operator/.test(error.message),
  );
});
