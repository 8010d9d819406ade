// Sending domains and their DKIM keys: DomainAdminService for notifyctl (admin token) adds, lists and removes them;
// SigningKeyService (mailer token) hands the mailers a domain's key, still sealed (NOTIFY_DATA_KEY opens it there).
// A private key is generated here, sealed at once, and never returned, answered or logged by either service.
import { status } from '@grpc/grpc-js';
import { type AsyncHandlers, UserError } from '@notify/platform';
import { type Pool, type PoolClient, withTransaction } from '@notify/platform/database';
import type { DataKey } from '@notify/platform/mail';
import type { dispatch } from '@notify/proto';
import { defaultSelector, dnsRecord, generateDkimKeyPair, isDomain, isSelector, normalizeDomain } from './dkim-keys.ts';
import { deleteDomain, findSigningKey, insertDomain, listDomains, type SendingDomainRow } from './domain-store.ts';

export interface DomainDeps {
  readonly pool: Pool;
  readonly dataKey: DataKey;
}

const isPositiveId = (value: number): boolean => Number.isSafeInteger(value) && value > 0;

export function check(faults: (string | false)[]): void {
  const found = faults.filter((fault): fault is string => fault !== false);
  if (found.length > 0) throw new UserError(status.INVALID_ARGUMENT, 'invalid_argument', `invalid request: ${found.join('; ')}`, { fields: found });
}

export const domainFault = (domain: string): string | false => !isDomain(domain) && 'domain: must be a domain name such as mail.example.com';

/** The context a domain's private key is sealed under: a key sealed for one domain never opens as another's. */
export const sealContext = (domain: string): string => `dkim:${domain}`;

function toProto(row: SendingDomainRow): dispatch.SendingDomain__Output {
  const record = dnsRecord(row.domain, row.selector, row.publicKey);
  return {
    id: row.id,
    organizationId: row.organizationId,
    domain: row.domain,
    selector: row.selector,
    dnsName: record.name,
    dnsValue: record.value,
    createdAt: row.createdAt.toISOString(),
  };
}

const pgCode = (error: unknown): string | undefined => (error as { code?: string }).code;

/**
 * Judges a new domain, generates its key and stores it, as notifyctl's AddDomain and the public API's AddApiDomain
 * both do; `alongside` runs in the insert's transaction (the API's audit row).
 */
export async function createDomain(
  deps: DomainDeps,
  request: { organizationId: number; domain: string; selector: string },
  alongside: (client: PoolClient, row: SendingDomainRow) => Promise<void> = async () => undefined,
): Promise<SendingDomainRow> {
  const domain = normalizeDomain(request.domain);
  const selector = request.selector || defaultSelector;
  check([
    domainFault(domain),
    !isSelector(selector) && 'selector: 1 to 63 lowercase letters, digits or hyphens',
    `${selector}._domainkey.${domain}`.length > 253 && 'domain: too long for its DKIM record name (253 characters with the selector)',
  ]);
  const keys = await generateDkimKeyPair();
  try {
    return await withTransaction(deps.pool, async (client) => {
      const row = await insertDomain(client, {
        organizationId: request.organizationId,
        domain,
        selector,
        publicKey: keys.publicKey,
        sealedPrivateKey: deps.dataKey.seal(keys.privateKeyPem, sealContext(domain)),
      });
      await alongside(client, row);
      return row;
    });
  } catch (error) {
    if (pgCode(error) === '23505') throw new UserError(status.ALREADY_EXISTS, 'domain_exists', `${domain} is already a sending domain`, { cause: error });
    if (pgCode(error) === '23503')
      throw new UserError(status.NOT_FOUND, 'organization_not_found', `no organization ${request.organizationId}`, { cause: error });
    throw error;
  }
}

export function domainAdminHandlers(deps: DomainDeps): AsyncHandlers<dispatch.DomainAdminServiceDefinition> {
  return {
    async AddDomain(request) {
      check([!isPositiveId(request.organizationId) && 'organization_id: must be a positive integer']);
      return toProto(await createDomain(deps, request));
    },
    async ListDomains(request) {
      check([
        (request.organizationId < 0 || !Number.isSafeInteger(request.organizationId)) &&
          'organization_id: must be a positive integer (0 for every organization)',
      ]);
      const rows = await listDomains(deps.pool, request.organizationId === 0 ? undefined : request.organizationId);
      return { domains: rows.map(toProto) };
    },
    async RemoveDomain(request) {
      const domain = normalizeDomain(request.domain);
      check([!isPositiveId(request.organizationId) && 'organization_id: must be a positive integer', domainFault(domain)]);
      if (!(await deleteDomain(deps.pool, request.organizationId, domain))) {
        throw new UserError(status.NOT_FOUND, 'domain_not_found', `organization ${request.organizationId} has no sending domain ${domain}`);
      }
      return { removed: true };
    },
  };
}

export function signingKeyHandlers(deps: Pick<DomainDeps, 'pool'>): AsyncHandlers<dispatch.SigningKeyServiceDefinition> {
  return {
    async GetSigningKey(request) {
      const domain = normalizeDomain(request.domain);
      check([domainFault(domain)]);
      const key = await findSigningKey(deps.pool, domain);
      if (!key) throw new UserError(status.NOT_FOUND, 'domain_not_found', `${domain} has no DKIM key`);
      return { domain, selector: key.selector, sealedPrivateKey: key.sealedPrivateKey };
    },
  };
}
