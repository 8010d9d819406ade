// notifyctl's help texts, generated from the command definitions so they cannot drift from what is parsed.
import { commonOptions, type OptionSpec } from './args.ts';
import type { Command, CommandGroup } from './commands/command.ts';
import { defaultAddresses, type Target } from './connections.ts';

function flagText(name: string, spec: OptionSpec): string {
  return spec.type === 'boolean' ? `--${name}` : `--${name} ${spec.value ?? 'VALUE'}`;
}

export function usageLine(group: CommandGroup, command: Command): string {
  if (command.usage) return command.usage;
  const flags = Object.entries(command.options).map(([name, spec]) => (spec.required ? flagText(name, spec) : `[${flagText(name, spec)}]`));
  return ['notifyctl', group.name, command.name, ...flags, '[--json]'].join(' ');
}

function table(rows: readonly (readonly [string, string])[]): string {
  const width = Math.max(...rows.map(([left]) => left.length));
  return rows.map(([left, right]) => `  ${left.padEnd(width)}  ${right}`).join('\n');
}

const environment = table([
  ['AUTH_SVC_ADDR', `auth-svc gRPC address for plan, org, project, key (default ${defaultAddresses.auth})`],
  ['DISPATCH_SVC_ADDR', `dispatch-svc gRPC address for template, messages, dead-letters, suppression, webhook, domain (default ${defaultAddresses.dispatch})`],
  ['ADMIN_TOKEN', 'admin token (AuthAdminService, the admin services of dispatch-svc and ListMessages): every group but webhook listen'],
  ['GRPC_TLS_CA_FILE', 'PEM CA certificate to verify auth-svc and dispatch-svc with when they serve TLS (default: plaintext)'],
]);

export function globalHelp(groups: readonly CommandGroup[]): string {
  return `notifyctl: operate Notify (plans, organizations, projects, API keys, templates, messages, dead letters, suppressions, webhooks, sending domains)

Usage: notifyctl <group> <command> [options]

Groups:
${table(groups.map((group) => [group.name, group.summary]))}

Every command also takes:
${table([
  ['--json', commonOptions.json.description],
  ['-h, --help', commonOptions.help.description],
])}

Environment:
${environment}

Exit status: 0 done, 1 the service refused or failed (reason printed), 2 wrong command line or environment.
Run 'notifyctl <group> --help' for the commands of a group.
`;
}

function serverLine(target: Target): string {
  const variable = target === 'auth' ? 'AUTH_SVC_ADDR' : 'DISPATCH_SVC_ADDR';
  return `Talks to ${target}-svc at $${variable} (default ${defaultAddresses[target]}) with $ADMIN_TOKEN.`;
}

export function groupHelp(group: CommandGroup): string {
  const commands = group.commands.map((command) => `  ${usageLine(group, command)}\n      ${command.summary}`).join('\n');
  return `notifyctl ${group.name}: ${group.summary}

Commands:
${commands}

${serverLine(group.target)}
Run 'notifyctl ${group.name} <command> --help' for the options of a command.
`;
}

export function commandHelp(group: CommandGroup, command: Command): string {
  const options = Object.entries({ ...command.options, ...commonOptions }).map(([name, spec]): [string, string] => [
    name === 'help' ? '-h, --help' : flagText(name, spec),
    'required' in spec && spec.required ? `${spec.description} (required)` : spec.description,
  ]);
  return `notifyctl ${group.name} ${command.name}: ${command.summary}

Usage: ${usageLine(group, command)}

Options:
${table(options)}

${serverLine(command.target ?? group.target)}
`;
}
