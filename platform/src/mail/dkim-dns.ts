// A DKIM record as DNS carries it: looked up with node:dns (its own servers when given, so tests and notifyctl can ask
// a chosen one), and compared with the record a domain was told to publish. notifyctl's `domain check` and
// dispatch-svc's domain verifier judge a record the same way, here.
import { Resolver } from 'node:dns/promises';
import { isIP } from 'node:net';

/** The tags of a DKIM key record (RFC 6376 3.6.1), whitespace removed from values as the RFC lets verifiers do. */
function dkimTags(record: string): Map<string, string> {
  const tags = new Map<string, string>();
  for (const part of record.split(';')) {
    const equals = part.indexOf('=');
    if (equals < 0) continue;
    tags.set(part.slice(0, equals).trim(), part.slice(equals + 1).replace(/\s+/g, ''));
  }
  return tags;
}

export type DkimRecordStatus = 'published' | 'different' | 'missing';

/** Compares what DNS answered (each record's strings) with the record to publish: the key (`p=`) decides. */
export function compareDkimRecords(expected: string, found: readonly (readonly string[])[]): { status: DkimRecordStatus; found: string[] } {
  const records = found.map((strings) => strings.join(''));
  const dkim = records.filter((record) => dkimTags(record).has('p'));
  const wanted = dkimTags(expected).get('p');
  if (dkim.length === 0) return { status: 'missing', found: records };
  return {
    status: dkim.some((record) => dkimTags(record).get('p') === wanted && (dkimTags(record).get('k') ?? 'rsa') === 'rsa') ? 'published' : 'different',
    found: records,
  };
}

/**
 * DNS servers written as comma-separated IP addresses, each with an optional port (`127.0.0.1:5353`, `[::1]:53`), as
 * node:dns's setServers takes them. Throws a RangeError naming the first entry that is not one.
 */
export function parseDnsServers(raw: string): string[] {
  const servers = raw.split(',').map((part) => part.trim());
  for (const server of servers) {
    const bracketed = /^\[([^\]]+)\](?::(\d{1,5}))?$/.exec(server) ?? /^([^:]+)(?::(\d{1,5}))?$/.exec(server);
    const host = bracketed ? (bracketed[1] ?? '') : server;
    const port = bracketed?.[2] === undefined ? 53 : Number(bracketed[2]);
    if (isIP(host) === 0 || port < 1 || port > 65535) throw new RangeError(`'${server}' is not an IP address with an optional port`);
  }
  return servers;
}

/**
 * The TXT records of `name`, each as its strings; no record (or no such name) is an empty list. Asks `servers` when
 * given, else the system's resolvers. Throws an Error with the resolver's code (ETIMEOUT, ESERVFAIL...) otherwise.
 */
export async function lookUpTxt(name: string, servers: readonly string[] | undefined): Promise<string[][]> {
  const resolver = new Resolver({ timeout: 3_000, tries: 2 });
  if (servers) resolver.setServers(servers);
  try {
    return await resolver.resolveTxt(name);
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    if (code === 'ENOTFOUND' || code === 'ENODATA') return [];
    throw new Error(`looking up the TXT record of ${name} failed: ${code ?? (error as Error).message}`, { cause: error });
  }
}
