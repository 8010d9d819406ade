import assert from 'node:assert/strict';
import { Readable } from 'node:stream';
import { test } from 'node:test';
import { Flags } from '../args.ts';
import { fileWriter } from '../testing/files.ts';
import { notifyctl, requestOf } from '../testing/notifyctl.ts';

const secretFile = fileWriter('relays');

test('update reads the relays, passwords and all, from the first line of --smtp-url-file', async () => {
  const relays = 'smtps://bulk:s3cret@pool-b.example.net:465,smtp://pool-c.example.net:587';
  assert.deepEqual(await requestOf(['project', 'update', '--id', '42', '--smtp-url-file', secretFile(`${relays}\n`)]), { projectId: 42, smtpUrl: relays });
});

test('update takes `default` and relays without a password on the command line', async () => {
  assert.deepEqual(await requestOf(['project', 'update', '--id', '42', '--smtp-url', 'default']), { projectId: 42, smtpUrl: '' });
  assert.deepEqual(await requestOf(['project', 'update', '--id', '42', '--smtp-url', 'smtp://relay.internal:25']), {
    projectId: 42,
    smtpUrl: 'smtp://relay.internal:25',
  });
});

test('a relay password on the command line is refused, saying how to pass it; nothing is sent', async () => {
  const cases: [string[], RegExp][] = [
    [
      ['--smtp-url', 'smtps://bulk:s3cret@pool-b.example.net:465'],
      /--smtp-url would leave the secret in shell history and in ps; pass it with --smtp-url-file FILE, or --smtp-url-file - to read it from standard input/,
    ],
    [['--smtp-url', 'smtp://pool-c.example.net:587,smtps://bulk:s3cret@pool-b.example.net:465'], /--smtp-url would leave the secret/],
    [['--smtp-url', 'default', '--smtp-url-file', '-'], /give either --smtp-url-file or --smtp-url/],
    [[], /give either --smtp-url-file or --smtp-url/],
    [['--smtp-url-file', secretFile('\nsmtps://late:line@x.example')], /--smtp-url-file holds nothing: the secret is its first line/],
    [['--smtp-url-file', `${secretFile('')}-missing`], /cannot read --smtp-url-file '.*-missing': no such file/],
  ];
  for (const [options, message] of cases) {
    const outcome = await notifyctl(['project', 'update', '--id', '42', ...options], { ADMIN_TOKEN: 'admin-token-present' });
    assert.equal(outcome.code, 2, options.join(' '));
    assert.match(outcome.stderr, message);
    assert.doesNotMatch(outcome.stderr, /s3cret/, 'the refusal does not repeat the password');
    assert.match(outcome.stderr, /Run 'notifyctl project update --help' for usage/);
  }
});

test('a secret file named - is read from standard input, its first line without the line break', async () => {
  const flags = new Flags('project update', { 'smtp-url-file': '-' });
  assert.equal(await flags.secretFile('smtp-url-file', Readable.from(['smtps://a:b@relay.example:465\r\n', 'next line\n'])), 'smtps://a:b@relay.example:465');
});
