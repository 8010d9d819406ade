// What each recipient domain may take from the mailers, all replicas together: deliveries at once and messages per
// second. The defaults hold for every domain; MAILER_DESTINATION_LIMITS names the domains that differ, as
// `slow.example=2:5/s,bulk.example=50:600/min` (a domain, `=`, its concurrency, `:`, its rate as `<count>/<unit>`).
import { parseRate } from '@notify/platform';

export interface DestinationLimit {
  /** Deliveries to the domain at once, across all replicas. */
  readonly concurrency: number;
  /** Messages per second to the domain, across all replicas. */
  readonly perSecond: number;
}

/** Most deliveries at once one domain may be given: above it a limit is no limit (a replica holds at most 1,000 jobs). */
export const maxDestinationConcurrency = 10_000;

/** `1000/s`, `600/min`: the platform's rate syntax, as messages per second. */
export function parseMessageRate(raw: string): number {
  const rate = parseRate(raw);
  return rate.points / rate.windowSeconds;
}

/** The domain part of an address, lower-cased: the destination its mail is limited by. */
export function destinationOf(address: string): string {
  return address.slice(address.lastIndexOf('@') + 1).toLowerCase();
}

const domainPattern = /^(?=.{1,253}$)[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?(?:\.[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?)*$/;

function parseConcurrency(raw: string): number {
  if (!/^\d{1,9}$/.test(raw)) throw new Error(`concurrency ${JSON.stringify(raw)} must be a whole number`);
  const concurrency = Number(raw);
  if (concurrency < 1 || concurrency > maxDestinationConcurrency) throw new Error(`concurrency ${concurrency} must be from 1 to ${maxDestinationConcurrency}`);
  return concurrency;
}

/** Parses MAILER_DESTINATION_LIMITS; throws an Error naming the entry at fault and what it should look like. */
export function parseDestinationLimits(raw: string): ReadonlyMap<string, DestinationLimit> {
  const limits = new Map<string, DestinationLimit>();
  for (const entry of raw.split(',').map((part) => part.trim())) {
    if (entry === '') continue;
    try {
      const match = /^([^=\s]+)\s*=\s*([^:\s]+)\s*:\s*(.+)$/.exec(entry);
      if (!match) throw new Error('must be <domain>=<concurrency>:<count>/<unit>, such as slow.example=2:5/s');
      const [, rawDomain = '', rawConcurrency = '', rawRate = ''] = match;
      const domain = rawDomain.toLowerCase();
      if (!domainPattern.test(domain)) throw new Error(`${JSON.stringify(rawDomain)} is not a domain name`);
      if (limits.has(domain)) throw new Error(`${domain} is given twice`);
      limits.set(domain, { concurrency: parseConcurrency(rawConcurrency), perSecond: parseMessageRate(rawRate) });
    } catch (error) {
      throw new Error(`entry ${JSON.stringify(entry)}: ${(error as Error).message}`);
    }
  }
  return limits;
}
