// Step 2b of a send (after the fields, before the template): who it is From (docs/contract.md, "Sending from your own
// domains"). A key limited to some domains may send only From one of them, and names it (403); a send that names a
// From must name it on a verified sending domain of its organization (422 on `from`), since mail signed by no key
// receivers can find would fail DMARC. One lookup for the whole batch, only when a send of it names a From.
import { status } from '@grpc/grpc-js';
import { UserError } from '@notify/platform';
import type { PoolClient } from '@notify/platform/database';
import type { BatchVerdicts } from './batch-verdicts.ts';

/** The domain of a From address, lower case ('' for none): domains compare in any case, local parts do not. */
export const domainOf = (address: string): string => address.slice(address.lastIndexOf('@') + 1).toLowerCase();

/** [the domain asked for ('' when the send named no From), ...the domains the key may send From]. */
function fromDomainNotAllowed(domain: string, allowed: readonly string[]): UserError {
  const asked = domain === '' ? 'no From' : `From ${domain}`;
  return new UserError(status.PERMISSION_DENIED, 'from_domain_not_allowed', `the API key may not send ${asked}; it may send From ${allowed.join(', ')}`, {
    fields: [domain, ...allowed],
  });
}

function fromDomainUnverified(domain: string): UserError {
  return new UserError(status.INVALID_ARGUMENT, 'from_domain_unverified', `${domain} is not a verified sending domain of the organization`, {
    fields: [domain],
  });
}

export async function judgeSenders(client: PoolClient, batch: BatchVerdicts): Promise<void> {
  const named: { index: number; organizationId: number; domain: string }[] = [];
  for (const index of batch.open()) {
    const { request, input } = batch.send(index);
    const domain = input.from ? domainOf(input.from.address) : '';
    if (request.keyFromDomains.length > 0 && !request.keyFromDomains.includes(domain))
      batch.refuse(index, fromDomainNotAllowed(domain, request.keyFromDomains));
    else if (domain !== '') named.push({ index, organizationId: request.organizationId, domain });
  }
  if (named.length === 0) return;
  const { rows } = await client.query<{ organization_id: number; domain: string }>({
    name: 'send-verified-from-domains',
    text: `SELECT organization_id, domain FROM sending_domains
            WHERE domain = ANY($1::text[]) AND dkim_status = 'verified'`,
    values: [[...new Set(named.map(({ domain }) => domain))]],
  });
  const verified = new Set(rows.map((row) => `${row.organization_id} ${row.domain}`));
  for (const { index, organizationId, domain } of named) {
    if (!verified.has(`${organizationId} ${domain}`)) batch.refuse(index, fromDomainUnverified(domain));
  }
}
