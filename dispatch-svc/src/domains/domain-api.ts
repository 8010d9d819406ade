// DispatchService's sending-domain calls for the public API (gateway token): a domain belongs to one organization and
// every call is matched on it, so another organization's id is NOT_FOUND like a missing one. Each change is recorded
// in the audit log in its own transaction; no answer and no audit row ever carries a private key.
import { randomBytes } from 'node:crypto';
import { status } from '@grpc/grpc-js';
import { type AsyncHandlers, UserError } from '@notify/platform';
import { type PoolClient, recordAudit, withTransaction } from '@notify/platform/database';
import type { dispatch } from '@notify/proto';
import { defaultSelector, dnsRecord, generateDkimKeyPair } from './dkim-keys.ts';
import { createDomain, type DomainDeps, sealContext } from './domain-admin.ts';
import {
  type ApiDomainRow,
  deleteOrganizationDomain,
  findOrganizationDomain,
  listOrganizationDomains,
  type RecordCheck,
  requestVerification,
  setNextKey,
} from './domain-api-store.ts';

function recordProto(purpose: string, domain: string, key: { selector: string; publicKey: string }, check: RecordCheck): dispatch.DomainRecord__Output {
  const record = dnsRecord(domain, key.selector, key.publicKey);
  return {
    purpose,
    type: 'TXT',
    name: record.name,
    value: record.value,
    status: check.status,
    checkedAt: check.checkedAt?.toISOString() ?? '',
    failure: check.failure ?? '',
  };
}

function toProto(row: ApiDomainRow): dispatch.ApiDomain__Output {
  return {
    id: row.id,
    domain: row.domain,
    selector: row.selector,
    status: row.dkim.status,
    verifying: row.verifyRequestedAt !== null,
    records: [recordProto('dkim', row.domain, row, row.dkim), ...(row.next ? [recordProto('dkim_rotation', row.domain, row.next, row.next)] : [])],
    createdAt: row.createdAt.toISOString(),
  };
}

const notFound = (): UserError => new UserError(status.NOT_FOUND, 'domain_not_found', 'the organization has no sending domain with this id');

/** A rotation's selector: the default's name and a random suffix, never one the domain already has. */
function rotationSelector(row: ApiDomainRow): string {
  for (;;) {
    const selector = `${defaultSelector}-${randomBytes(3).toString('hex')}`;
    if (selector !== row.selector && selector !== row.next?.selector) return selector;
  }
}

type ChangeRequest = dispatch.ApiDomainRequest__Output;

/** Runs `change` on the caller's domain in a transaction and records `action` with it; NOT_FOUND for any other id. */
function changeDomain(
  deps: DomainDeps,
  request: ChangeRequest,
  action: string,
  change: (client: PoolClient) => Promise<ApiDomainRow | undefined>,
  detail: (row: ApiDomainRow) => Record<string, unknown>,
): Promise<dispatch.ApiDomain__Output> {
  return withTransaction(deps.pool, async (client) => {
    const row = await change(client);
    if (!row) throw notFound();
    const { organizationId, projectId, apiKeyId } = request;
    await recordAudit(client, { organizationId, projectId, apiKeyId, action, target: String(row.id), detail: detail(row) });
    return toProto(row);
  });
}

type ApiDomainMethods = 'ListApiDomains' | 'AddApiDomain' | 'GetApiDomain' | 'VerifyApiDomain' | 'RotateApiDomainDkim' | 'RemoveApiDomain';

export function apiDomainHandlers(deps: DomainDeps): Pick<AsyncHandlers<dispatch.DispatchServiceDefinition>, ApiDomainMethods> {
  return {
    async ListApiDomains(request) {
      return { domains: (await listOrganizationDomains(deps.pool, request.organizationId)).map(toProto) };
    },
    async AddApiDomain(request) {
      const { organizationId, projectId, apiKeyId } = request;
      const created = await createDomain(deps, { organizationId, domain: request.domain, selector: '' }, (client, row) =>
        recordAudit(client, {
          organizationId,
          projectId,
          apiKeyId,
          action: 'domain.create',
          target: String(row.id),
          detail: { domain: row.domain, selector: row.selector },
        }),
      );
      const row = await findOrganizationDomain(deps.pool, organizationId, created.id);
      if (!row) throw notFound();
      return toProto(row);
    },
    async GetApiDomain(request) {
      const row = await findOrganizationDomain(deps.pool, request.organizationId, request.domainId);
      if (!row) throw notFound();
      return toProto(row);
    },
    VerifyApiDomain: (request) =>
      changeDomain(
        deps,
        request,
        'domain.verify',
        (client) => requestVerification(client, request.organizationId, request.domainId),
        (row) => ({ domain: row.domain }),
      ),
    async RotateApiDomainDkim(request) {
      const keys = await generateDkimKeyPair();
      return changeDomain(
        deps,
        request,
        'domain.rotate_dkim',
        async (client) => {
          const row = await findOrganizationDomain(client, request.organizationId, request.domainId, true);
          if (!row) return undefined;
          const selector = rotationSelector(row);
          return setNextKey(client, row.id, {
            selector,
            publicKey: keys.publicKey,
            sealedPrivateKey: deps.dataKey.seal(keys.privateKeyPem, sealContext(row.domain)),
          });
        },
        (row) => ({ domain: row.domain, signing_selector: row.selector, new_selector: row.next?.selector }),
      );
    },
    RemoveApiDomain: (request) =>
      changeDomain(
        deps,
        request,
        'domain.delete',
        (client) => deleteOrganizationDomain(client, request.organizationId, request.domainId),
        (row) => ({ domain: row.domain }),
      ),
  };
}
