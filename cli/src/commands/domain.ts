// notifyctl domain: the domains an organization sends from and their DKIM keys. Talks to dispatch-svc's
// DomainAdminService (admin token). `add` generates the key pair there and prints the DNS TXT record to publish (the
// private key never leaves dispatch-svc unsealed); `check` looks the record up in DNS and says whether it matches.
import { compareDkimRecords, type DkimRecordStatus, lookUpTxt, parseDnsServers } from '@notify/platform/mail';
import type { dispatch } from '@notify/proto';
import { UsageError } from '../args.ts';
import { type Column, type Io, print } from '../output.ts';
import { CheckFailed, type CommandGroup } from './command.ts';

const columns: readonly Column<dispatch.SendingDomain__Output>[] = [
  { header: 'DOMAIN', value: (entry) => entry.domain, maxWidth: 80 },
  { header: 'ORG', value: (entry) => entry.organizationId },
  { header: 'SELECTOR', value: (entry) => entry.selector },
  { header: 'DNS NAME', value: (entry) => entry.dnsName, maxWidth: 100 },
  { header: 'CREATED', value: (entry) => entry.createdAt },
];

/** One character-string of a TXT record holds at most 255 octets (RFC 1035 3.3); longer values are split. */
const txtStringLimit = 255;

export function txtStrings(value: string): string[] {
  const strings: string[] = [];
  for (let start = 0; start < value.length; start += txtStringLimit) strings.push(value.slice(start, start + txtStringLimit));
  return strings;
}

/** The record as a zone file line, split into quoted strings as DNS needs. */
export function zoneLine(entry: Pick<dispatch.SendingDomain__Output, 'dnsName' | 'dnsValue'>): string {
  return `${entry.dnsName}. IN TXT ( ${txtStrings(entry.dnsValue)
    .map((part) => `"${part}"`)
    .join(' ')} )`;
}

/** `--dns-server` values: comma-separated IP addresses, each with an optional port (`127.0.0.1:5353`, `[::1]:53`). */
function dnsServers(raw: string | undefined): string[] | undefined {
  if (raw === undefined) return undefined;
  try {
    return parseDnsServers(raw);
  } catch (error) {
    throw new UsageError(
      `--dns-server must be IP addresses with optional ports separated by commas (1.1.1.1, 127.0.0.1:5353, [::1]:53): ${(error as Error).message}`,
      'domain check',
    );
  }
}

function printAdded(io: Io, entry: dispatch.SendingDomain__Output): void {
  io.stdout(
    [
      `added ${entry.domain} to organization ${entry.organizationId}. Publish this DNS TXT record to have its mail signed with DKIM:`,
      '',
      `  name:  ${entry.dnsName}`,
      `  value: ${entry.dnsValue}`,
      '',
      `As a zone file line (a TXT string holds at most ${txtStringLimit} characters, so the value is split; most DNS providers split it themselves):`,
      '',
      `  ${zoneLine(entry)}`,
      '',
      `Mail From ${entry.domain} is signed (selector ${entry.selector}) from the mailers' next key refresh; check the record with`,
      `  notifyctl domain check --org ${entry.organizationId} --domain ${entry.domain}`,
      '',
    ].join('\n'),
  );
}

export const domainCommands: CommandGroup = {
  name: 'domain',
  summary: 'sending domains and their DKIM keys: add prints the DNS record to publish, check looks it up',
  target: 'dispatch',
  commands: [
    {
      name: 'add',
      summary: "generate a DKIM key pair (RSA 2048) for an organization's domain and print the TXT record to publish",
      options: {
        org: { type: 'string', value: 'ID', required: true, description: 'organization id' },
        domain: { type: 'string', value: 'DOMAIN', required: true, description: 'the domain of MAIL_FROM, such as mail.example.com' },
        selector: { type: 'string', value: 'NAME', description: 'DKIM selector: lowercase letters, digits and hyphens (default notify)' },
      },
      prepare(flags) {
        const request = { organizationId: flags.id('org'), domain: flags.string('domain'), selector: flags.optionalString('selector') ?? '' };
        return {
          request,
          async execute({ connections, io, json }) {
            const entry = await connections.domainAdmin().call('AddDomain', request);
            if (json) io.stdout(`${JSON.stringify(entry, null, 2)}\n`);
            else printAdded(io, entry);
          },
        };
      },
    },
    {
      name: 'list',
      summary: "list an organization's sending domains (every organization's without --org)",
      options: {
        org: { type: 'string', value: 'ID', description: 'organization id' },
      },
      prepare(flags) {
        const request = { organizationId: flags.optionalId('org') ?? 0 };
        return {
          request,
          async execute({ connections, io, json }) {
            const response = await connections.domainAdmin().call('ListDomains', request);
            print(io, json, response, columns, response.domains);
          },
        };
      },
    },
    {
      name: 'remove',
      summary: 'remove a sending domain and its key: its mail goes out unsigned from the mailers’ next key refresh',
      options: {
        org: { type: 'string', value: 'ID', required: true, description: 'organization id' },
        domain: { type: 'string', value: 'DOMAIN', required: true, description: 'the domain' },
      },
      prepare(flags) {
        const request = { organizationId: flags.id('org'), domain: flags.string('domain') };
        return {
          request,
          async execute({ connections, io, json }) {
            await connections.domainAdmin().call('RemoveDomain', request);
            if (json) io.stdout(`${JSON.stringify({ removed: request.domain })}\n`);
            else io.stdout(`removed ${request.domain} from organization ${request.organizationId}; its DNS record can be deleted once its mail is delivered\n`);
          },
        };
      },
    },
    {
      name: 'check',
      summary: "look the domain's DKIM record up in DNS and say whether it is the one to publish (exit 1 when it is not)",
      options: {
        org: { type: 'string', value: 'ID', required: true, description: 'organization id' },
        domain: { type: 'string', value: 'DOMAIN', required: true, description: 'the domain' },
        'dns-server': { type: 'string', value: 'IP[:PORT],...', description: "DNS servers to ask instead of the system's resolvers" },
      },
      prepare(flags) {
        const request = { organizationId: flags.id('org'), domain: flags.string('domain') };
        const servers = dnsServers(flags.optionalString('dns-server'));
        return {
          request,
          async execute({ connections, io, json }) {
            const wanted = request.domain.trim().toLowerCase().replace(/\.$/, '');
            const { domains } = await connections.domainAdmin().call('ListDomains', { organizationId: request.organizationId });
            const entry = domains.find((candidate) => candidate.domain === wanted);
            if (!entry)
              throw new UsageError(
                `organization ${request.organizationId} has no sending domain ${wanted} (notifyctl domain list --org ${request.organizationId})`,
                'domain check',
              );
            const result = compareDkimRecords(entry.dnsValue, await lookUpTxt(entry.dnsName, servers));
            if (json) {
              io.stdout(
                `${JSON.stringify({ domain: entry.domain, dnsName: entry.dnsName, expected: entry.dnsValue, found: result.found, status: result.status }, null, 2)}\n`,
              );
            }
            const verdict: Record<DkimRecordStatus, string> = {
              published: `published: ${entry.dnsName} has the expected DKIM key; mail From ${entry.domain} will verify`,
              different: `different: ${entry.dnsName} has a DKIM record with another key; publish the value from \`notifyctl domain list --org ${entry.organizationId} --json\``,
              missing: `missing: ${entry.dnsName} has no DKIM record yet (DNS changes can take a while to be seen); publish:\n  ${zoneLine(entry)}`,
            };
            if (result.status !== 'published') throw new CheckFailed(verdict[result.status]);
            if (!json) io.stdout(`${verdict.published}\n`);
          },
        };
      },
    },
  ],
};
