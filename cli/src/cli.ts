// notifyctl's dispatcher: finds the command, validates its flags into a request, executes it, and turns every failure
// into one line on stderr with a stable exit status: 0 done, 1 failed (the service said no or could not be reached, or a
// check such as `domain check` found something wrong), 2 the command line is wrong. Nothing goes to stdout on failure
// but a check's --json report.
import { status } from '@grpc/grpc-js';
import { RemoteError } from '@notify/platform';
import { parseFlags, UsageError } from './args.ts';
import { auditCommands } from './commands/audit.ts';
import { CheckFailed, type Command, type CommandGroup, type Prepared } from './commands/command.ts';
import { deadLettersCommands } from './commands/dead-letters.ts';
import { domainCommands } from './commands/domain.ts';
import { keyCommands } from './commands/key.ts';
import { messagesCommands } from './commands/messages.ts';
import { orgCommands } from './commands/org.ts';
import { panelUserCommands } from './commands/panel-user.ts';
import { planCommands } from './commands/plan.ts';
import { projectCommands } from './commands/project.ts';
import { suppressionCommands } from './commands/suppression.ts';
import { templateCommands } from './commands/template.ts';
import { webhookCommands } from './commands/webhook.ts';
import { Connections } from './connections.ts';
import { commandHelp, globalHelp, groupHelp } from './help.ts';
import type { Io } from './output.ts';

export const groups: readonly CommandGroup[] = [
  planCommands,
  orgCommands,
  projectCommands,
  keyCommands,
  templateCommands,
  messagesCommands,
  deadLettersCommands,
  suppressionCommands,
  webhookCommands,
  domainCommands,
  panelUserCommands,
  auditCommands,
];

export const exitCodes = { ok: 0, failed: 1, usage: 2 } as const;

const helpWords = new Set(['help', '--help', '-h']);

/** What the command line asks for: a help text, or one prepared call. */
export type Invocation =
  | { readonly kind: 'help'; readonly text: string }
  | { readonly kind: 'call'; readonly group: CommandGroup; readonly command: Command; readonly json: boolean; readonly prepared: Prepared };

function findGroup(name: string): CommandGroup {
  const group = groups.find((candidate) => candidate.name === name);
  if (!group) throw new UsageError(`unknown command '${name}'`);
  return group;
}

/** Resolves argv into an invocation; throws UsageError for anything wrong, before any connection is opened. */
export async function resolve(argv: readonly string[]): Promise<Invocation> {
  const [first, second, ...rest] = argv;
  if (first === undefined) throw new UsageError('missing command');
  if (helpWords.has(first)) {
    if (second === undefined) return { kind: 'help', text: globalHelp(groups) };
    return resolve([second, ...rest, '--help']);
  }
  const group = findGroup(first);
  if (second === undefined)
    throw new UsageError(`missing command after '${group.name}' (one of: ${group.commands.map((command) => command.name).join(', ')})`, group.name);
  if (helpWords.has(second)) return { kind: 'help', text: groupHelp(group) };
  const command = group.commands.find((candidate) => candidate.name === second);
  if (!command) throw new UsageError(`unknown command '${group.name} ${second}'`, group.name);
  const flags = parseFlags(`${group.name} ${command.name}`, rest, command.options);
  if (flags.help) return { kind: 'help', text: commandHelp(group, command) };
  return { kind: 'call', group, command, json: flags.json, prepared: await command.prepare(flags) };
}

function remoteFailure(error: RemoteError, group: CommandGroup, command: Command, connections: Connections): string {
  const target = command.target ?? group.target;
  const server = connections.describe(target);
  if (error.status === status.UNAVAILABLE && error.reason !== 'service_unavailable') {
    // grpc-js nests the socket error in a long sentence; the socket error is what the operator needs.
    const cause = /.*Last error: (?:Error: )?(.+?)(?:\. Resolution note|$)/.exec(error.message)?.[1] ?? error.message;
    return `cannot reach ${server}: ${cause}`;
  }
  if (error.status === status.DEADLINE_EXCEEDED) return `${error.reason}: ${server} did not answer in time`;
  const hint =
    error.status === status.UNAUTHENTICATED
      ? ` (is ADMIN_TOKEN the one ${target}-svc was started with?)`
      : error.status === status.PERMISSION_DENIED
        ? ` (ADMIN_TOKEN holds another component's token: notifyctl needs the admin one)`
        : error.reason === 'service_unavailable'
          ? ` (${server})`
          : '';
  const fields = error.fields.map((field) => `\n  - ${field}`).join('');
  return `${error.reason}: ${error.message}${hint}${fields}`;
}

/** Runs notifyctl with `argv` (without node and script), writing to `io`; resolves the exit status. */
export async function run(argv: readonly string[], io: Io, env: Readonly<Record<string, string | undefined>>): Promise<number> {
  const connections = new Connections(env);
  let invocation: Invocation | undefined;
  try {
    invocation = await resolve(argv);
    if (invocation.kind === 'help') {
      io.stdout(invocation.text);
      return exitCodes.ok;
    }
    await invocation.prepared.execute({ connections, io, json: invocation.json });
    return exitCodes.ok;
  } catch (error) {
    if (error instanceof UsageError) {
      const command = error.command || (invocation?.kind === 'call' ? `${invocation.group.name} ${invocation.command.name}` : '');
      io.stderr(`notifyctl: ${error.message}\nRun 'notifyctl ${command ? `${command} --help` : 'help'}' for usage.\n`);
      return exitCodes.usage;
    }
    if (error instanceof RemoteError && invocation?.kind === 'call') {
      io.stderr(`notifyctl: ${remoteFailure(error, invocation.group, invocation.command, connections)}\n`);
      return exitCodes.failed;
    }
    if (error instanceof CheckFailed) {
      io.stderr(`notifyctl: ${error.message}\n`);
      return exitCodes.failed;
    }
    // A bug or a local failure: its message, never a stack trace.
    io.stderr(`notifyctl: unexpected error: ${error instanceof Error ? error.message : String(error)}\n`);
    return exitCodes.failed;
  } finally {
    connections.close();
  }
}
