// notifyctl panel-user: people of an organization who sign in to the web panel (viewer: reads; operator: also
// re-queues failed messages). A password is never taken from the command line, where shell history and `ps` would
// keep it: it comes from --password-file, from standard input, or from a prompt that does not echo.
import type { auth } from '@notify/proto';
import { type Flags, type OptionSpecs, readStream, UsageError } from '../args.ts';
import { type Column, print } from '../output.ts';
import type { CommandGroup } from './command.ts';

export const panelRoles = ['viewer', 'operator'] as const;

const columns: readonly Column<auth.PanelUser__Output>[] = [
  { header: 'ID', value: (user) => user.id },
  { header: 'ORG', value: (user) => user.organizationId },
  { header: 'EMAIL', value: (user) => user.email },
  { header: 'ROLE', value: (user) => user.role },
  { header: 'CREATED', value: (user) => user.createdAt },
  { header: 'PASSWORD CHANGED', value: (user) => user.passwordChangedAt },
  { header: 'DISABLED', value: (user) => user.disabledAt },
];

const passwordFile = {
  'password-file': {
    type: 'string',
    value: 'FILE',
    description: 'read the password from the first line of FILE, - for standard input (default: standard input, or a prompt on a terminal)',
  },
} as const satisfies OptionSpecs;

/** One trailing line break is the file's or the pipe's, not the password's. */
const withoutLineBreak = (text: string): string => text.replace(/\r?\n$/, '');

/** Asks on the terminal without echoing what is typed. */
function prompt(question: string): Promise<string> {
  const { stdin, stderr } = process;
  stderr.write(question);
  stdin.setRawMode(true);
  stdin.setEncoding('utf8');
  stdin.resume();
  return new Promise((resolve, reject) => {
    let typed = '';
    const finish = (): void => {
      stdin.off('data', onData);
      stdin.setRawMode(false);
      stdin.pause();
      stderr.write('\n');
    };
    const onData = (chunk: string): void => {
      for (const character of chunk) {
        if (character === '\r' || character === '\n' || character === '\u0004') {
          finish();
          resolve(typed);
          return;
        }
        if (character === '\u0003') {
          finish();
          reject(new UsageError('cancelled'));
          return;
        }
        typed = character === '\u007f' || character === '\b' ? [...typed].slice(0, -1).join('') : typed + character;
      }
    };
    stdin.on('data', onData);
  });
}

/** The new password, from --password-file, a terminal prompt (asked twice) or standard input. */
export async function readPassword(flags: Flags, stdin: NodeJS.ReadableStream & { isTTY?: boolean } = process.stdin): Promise<string> {
  let password: string;
  if (flags.has('password-file')) {
    password = await flags.secretFile('password-file', stdin);
  } else if (stdin.isTTY) {
    password = await prompt('Password: ');
    if ((await prompt('Password again: ')) !== password) throw new UsageError('the two passwords differ', flags.command);
  } else {
    password = withoutLineBreak(await readStream(stdin));
  }
  if (password === '') throw new UsageError('the password is empty (give it on standard input or with --password-file)', flags.command);
  return password;
}

function role(flags: Flags): string {
  const value = flags.optionalChoice('role', panelRoles);
  if (value === undefined) throw new UsageError('missing required option --role', flags.command);
  return value;
}

export const panelUserCommands: CommandGroup = {
  name: 'panel-user',
  summary: 'people who sign in to the web panel, each in one organization',
  target: 'auth',
  commands: [
    {
      name: 'create',
      summary: 'create a panel user; the password is read from --password-file or standard input',
      options: {
        org: { type: 'string', value: 'ID', required: true, description: 'organization id' },
        email: { type: 'string', value: 'EMAIL', required: true, description: 'what the person signs in with (unique, case-insensitive)' },
        role: { type: 'string', value: panelRoles.join('|'), required: true, description: 'viewer reads; operator also re-queues failed messages' },
        ...passwordFile,
      },
      async prepare(flags) {
        const request = { organizationId: flags.id('org'), email: flags.string('email'), role: role(flags), password: await readPassword(flags) };
        return {
          request,
          async execute({ connections, io, json }) {
            const user = await connections.authAdmin().call('CreatePanelUser', request);
            print(io, json, user, columns, [user]);
          },
        };
      },
    },
    {
      name: 'list',
      summary: "list an organization's panel users, disabled ones included",
      options: { org: { type: 'string', value: 'ID', required: true, description: 'organization id' } },
      prepare(flags) {
        const request = { organizationId: flags.id('org') };
        return {
          request,
          async execute({ connections, io, json }) {
            const response = await connections.authAdmin().call('ListPanelUsers', request);
            print(io, json, response, columns, response.users);
          },
        };
      },
    },
    {
      name: 'set-password',
      summary: "replace a panel user's password; their open sessions end",
      options: { id: { type: 'string', value: 'ID', required: true, description: 'panel user id (see: notifyctl panel-user list)' }, ...passwordFile },
      async prepare(flags) {
        const request = { id: flags.id('id'), password: await readPassword(flags) };
        return {
          request,
          async execute({ connections, io, json }) {
            const user = await connections.authAdmin().call('SetPanelUserPassword', request);
            print(io, json, user, columns, [user]);
          },
        };
      },
    },
    {
      name: 'disable',
      summary: 'stop a panel user from signing in; their open sessions end at their next request',
      options: { id: { type: 'string', value: 'ID', required: true, description: 'panel user id' } },
      prepare(flags) {
        const request = { id: flags.id('id') };
        return {
          request,
          async execute({ connections, io, json }) {
            const user = await connections.authAdmin().call('DisablePanelUser', request);
            print(io, json, user, columns, [user]);
          },
        };
      },
    },
  ],
};
