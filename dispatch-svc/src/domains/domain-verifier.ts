// The verifier of sending domains: each pass takes the domains whose verification was asked for (POST
// /api/v1/domains/{id}/verify), looks their DKIM records up in DNS (DNS_RESOLVER's servers, else the system's) and
// stores each record's outcome. A rotation's record that verified becomes the signing key, which the mailers fetch at
// their next DKIM_KEY_REFRESH: mail is only ever signed with a key receivers can find.
import type { Logger } from '@notify/platform';
import { type Pool, withTransaction } from '@notify/platform/database';
import { compareDkimRecords, lookUpTxt } from '@notify/platform/mail';
import { dnsRecord } from './dkim-keys.ts';
import { type RecordCheck, requestedVerifications, storeChecks } from './domain-api-store.ts';

export interface DomainVerifierDeps {
  readonly pool: Pool;
  /** DNS_RESOLVER: the servers to ask; undefined for the system's resolvers. */
  readonly servers: readonly string[] | undefined;
  readonly logger: Logger;
}

/** Domains looked up at once in a pass; the rest wait for the next one. */
const domainsPerPass = 20;

/** What DNS says of one record: verified when it publishes the key, failed with why otherwise. */
async function checkRecord(deps: DomainVerifierDeps, domain: string, selector: string, publicKey: string): Promise<RecordCheck> {
  const record = dnsRecord(domain, selector, publicKey);
  try {
    const { status } = compareDkimRecords(record.value, await lookUpTxt(record.name, deps.servers));
    const checkedAt = new Date();
    if (status === 'published') return { status: 'verified', checkedAt, failure: null };
    return { status: 'failed', checkedAt, failure: status === 'missing' ? 'record_missing' : 'key_mismatch' };
  } catch (error) {
    deps.logger.info({ err: error, record: record.name }, 'a DKIM record could not be looked up');
    return { status: 'failed', checkedAt: new Date(), failure: 'lookup_failed' };
  }
}

/** One pass: every queued domain (up to domainsPerPass) looked up and its outcome stored. */
export async function verifyRequestedDomains(deps: DomainVerifierDeps): Promise<void> {
  const queued = await requestedVerifications(deps.pool, domainsPerPass);
  await Promise.all(
    queued.map(async (domain) => {
      const [dkim, next] = await Promise.all([
        checkRecord(deps, domain.domain, domain.selector, domain.publicKey),
        domain.next ? checkRecord(deps, domain.domain, domain.next.selector, domain.next.publicKey) : null,
      ]);
      await withTransaction(deps.pool, (client) => storeChecks(client, domain, { dkim, next }));
      deps.logger.info({ domain: domain.domain, dkim: dkim.failure ?? dkim.status, rotation: next && (next.failure ?? next.status) }, 'sending domain checked');
    }),
  );
}
