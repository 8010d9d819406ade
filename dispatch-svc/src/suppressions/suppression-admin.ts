// A project's suppression list, listed, added to and removed from: SuppressionAdminService for notifyctl (admin
// token), the panel's two calls (PanelService, gateway token) and the public API's three (DispatchService, gateway
// token), which name the caller's organization too.
import { status } from '@grpc/grpc-js';
import { type AsyncHandlers, UserError } from '@notify/platform';
import { type Pool, recordAudit, withTransaction } from '@notify/platform/database';
import type { DataKey } from '@notify/platform/mail';
import { type dispatch, maxSuppressionsAdded } from '@notify/proto';
import type { DispatchMetrics } from '../metrics.ts';
import {
  addManualSuppressions,
  addSuppression,
  decodeSuppressionCursor,
  encodeSuppressionCursor,
  erasedEntryPattern,
  listSuppressions,
  normalizeAddress,
  readSuppressionPage,
  removeSuppression,
  type Suppression,
  type SuppressionReason,
  suppressionReasons,
} from './suppression-store.ts';

const defaultLimit = 100;
/** The panel shows one page: the newest entries, or those matching its search. */
const panelLimit = 200;
const isPositiveId = (value: number): boolean => Number.isSafeInteger(value) && value > 0;
/** One addr-spec, roughly: what the gateway accepts as `to` always passes (it checks it fully before any send). */
export const isAddress = (value: string): boolean => value.length <= 254 && /^[^@\s,;<>\u0000-\u001f\u007f]+@[^@\s,;<>\u0000-\u001f\u007f]+$/.test(value);
const isReason = (value: string): value is SuppressionReason => (suppressionReasons as readonly string[]).includes(value);

function invalid(faults: string[]): UserError {
  return new UserError(status.INVALID_ARGUMENT, 'invalid_argument', `invalid request: ${faults.join('; ')}`, { fields: faults });
}

function check(faults: (string | false)[]): void {
  const found = faults.filter((fault): fault is string => fault !== false);
  if (found.length > 0) throw invalid(found);
}

const toProto = (entry: Suppression): dispatch.Suppression__Output => ({
  projectId: entry.projectId,
  address: entry.address,
  reason: entry.reason,
  messageId: entry.messageId ?? 0,
  createdAt: entry.createdAt.toISOString(),
});

export function suppressionAdminHandlers(deps: {
  pool: Pool;
  dataKey: DataKey;
  metrics: Pick<DispatchMetrics, 'suppressions'>;
}): AsyncHandlers<dispatch.SuppressionAdminServiceDefinition> {
  return {
    async ListSuppressions(request) {
      check([
        !isPositiveId(request.projectId) && 'project_id: must be a positive integer',
        (request.limit < 0 || request.limit > 500) && 'limit: must be between 1 and 500 (0 for the default)',
        request.search.length > 254 && 'search: at most 254 characters',
      ]);
      const entries = await listSuppressions(deps.pool, { projectId: request.projectId, search: request.search, limit: request.limit || defaultLimit });
      return { suppressions: entries.map(toProto) };
    },
    async AddSuppression(request) {
      const reason = request.reason || 'manual';
      check([
        !isPositiveId(request.projectId) && 'project_id: must be a positive integer',
        !isAddress(request.address) && 'address: must be one email address',
        !isReason(reason) && `reason: must be one of ${suppressionReasons.join(', ')}`,
      ]);
      try {
        const entry = await addSuppression(deps.pool, deps.dataKey, {
          projectId: request.projectId,
          address: request.address,
          reason: reason as SuppressionReason,
        });
        if (entry.added) deps.metrics.suppressions.inc({ reason: entry.reason });
        return toProto(entry);
      } catch (error) {
        // The only foreign key an operator can get wrong.
        if ((error as { code?: string }).code === '23503')
          throw new UserError(status.NOT_FOUND, 'project_not_found', `no project ${request.projectId}`, { cause: error });
        throw error;
      }
    },
    async RemoveSuppression(request) {
      // An erased entry is named by its hash (erasedAddress).
      const named = isAddress(request.address) || erasedEntryPattern.test(request.address);
      check([
        !isPositiveId(request.projectId) && 'project_id: must be a positive integer',
        !named && 'address: must be one email address or an erased entry (hmac-sha256:<hex>)',
      ]);
      await remove(deps.pool, request.projectId, request.address);
      return {};
    },
  };
}

async function remove(pool: Pool, projectId: number, address: string): Promise<void> {
  if (!(await removeSuppression(pool, projectId, address))) {
    throw new UserError(status.NOT_FOUND, 'suppression_not_found', `${address} is not on the suppression list of project ${projectId}`);
  }
}

/** The project must be the organization's; otherwise it is as if it did not exist. */
export async function ensureOwned(pool: Pool, organizationId: number, projectId: number): Promise<void> {
  const owned = await pool.query({
    name: 'suppression-project-owner',
    text: 'SELECT 1 FROM projects WHERE id = $1 AND organization_id = $2',
    values: [projectId, organizationId],
  });
  if (owned.rowCount !== 1) throw new UserError(status.NOT_FOUND, 'project_not_found', `no project ${projectId} in this organization`);
}

export function panelSuppressionHandlers(deps: {
  pool: Pool;
}): Pick<AsyncHandlers<dispatch.PanelServiceDefinition>, 'ListProjectSuppressions' | 'RemoveProjectSuppression'> {
  return {
    async ListProjectSuppressions(request) {
      await ensureOwned(deps.pool, request.organizationId, request.projectId);
      const entries = await listSuppressions(deps.pool, { projectId: request.projectId, search: request.search.slice(0, 254), limit: panelLimit });
      return { suppressions: entries.map(toProto) };
    },
    async RemoveProjectSuppression(request) {
      await ensureOwned(deps.pool, request.organizationId, request.projectId);
      await remove(deps.pool, request.projectId, request.address);
      return {};
    },
  };
}

const actorOf = (request: { organizationId: number; projectId: number; apiKeyId: number }) => ({
  organizationId: request.organizationId,
  projectId: request.projectId,
  apiKeyId: request.apiKeyId,
});

/** The public API's page sizes (docs/contract.md, "Suppressions"), as the messages listing's. */
export const apiSuppressionLimits = { default: 50, max: 100 } as const;

/** DispatchService's suppression calls for the public API (gateway token), each scoped to the caller's project. */
export function apiSuppressionHandlers(deps: {
  pool: Pool;
  dataKey: DataKey;
  metrics: Pick<DispatchMetrics, 'suppressions'>;
}): Pick<AsyncHandlers<dispatch.DispatchServiceDefinition>, 'ListApiSuppressions' | 'AddApiSuppressions' | 'RemoveApiSuppression'> {
  return {
    async ListApiSuppressions(request) {
      const cursor = request.cursor === '' ? undefined : decodeSuppressionCursor(request.cursor);
      check([
        request.reason !== '' && !isReason(request.reason) && `reason: must be one of ${suppressionReasons.join(', ')}`,
        (request.limit < 0 || request.limit > apiSuppressionLimits.max) && `limit: must be between 1 and ${apiSuppressionLimits.max}`,
        request.cursor !== '' && cursor === undefined && 'cursor: not a cursor this API gave',
        request.address.length > 254 && 'address: at most 254 characters',
      ]);
      await ensureOwned(deps.pool, request.organizationId, request.projectId);
      const page = await readSuppressionPage(deps.pool, {
        projectId: request.projectId,
        reason: request.reason,
        address: request.address,
        limit: request.limit || apiSuppressionLimits.default,
        cursor,
      });
      return { suppressions: page.entries.map(toProto), nextCursor: page.next ? encodeSuppressionCursor(page.next) : '' };
    },

    async AddApiSuppressions(request) {
      const { addresses } = request;
      check([
        (addresses.length === 0 || addresses.length > maxSuppressionsAdded) && `addresses: from 1 to ${maxSuppressionsAdded}`,
        ...addresses.map((address, index) => !isAddress(address) && `addresses[${index}]: must be one email address`),
      ]);
      await ensureOwned(deps.pool, request.organizationId, request.projectId);
      const results = await withTransaction(deps.pool, async (client) => {
        const entries = (await addManualSuppressions(client, deps.dataKey, request.projectId, addresses)).map((entry) => ({
          suppression: toProto(entry),
          added: entry.added,
        }));
        const added = entries.filter((entry) => entry.added).map((entry) => entry.suppression?.address);
        if (added.length > 0)
          await recordAudit(client, {
            ...actorOf(request),
            action: 'suppression.add',
            target: added.length === 1 ? String(added[0]) : `${added.length} addresses`,
            detail: { addresses: added },
          });
        return entries;
      });
      for (const result of results) if (result.added) deps.metrics.suppressions.inc({ reason: 'manual' });
      return { results };
    },

    async RemoveApiSuppression(request) {
      const named = isAddress(request.address) || erasedEntryPattern.test(request.address);
      check([!named && 'address: must be one email address or an erased entry (hmac-sha256:<hex>)']);
      await ensureOwned(deps.pool, request.organizationId, request.projectId);
      return withTransaction(deps.pool, async (client) => {
        const { rows } = await client.query<Suppression>({
          name: 'suppression-remove-api',
          text: `DELETE FROM suppressions WHERE project_id = $1 AND address = $2
                  AND ($3 OR reason NOT IN ('hard_bounce', 'complaint')) RETURNING project_id AS "projectId", address, reason, message_id AS "messageId", created_at AS "createdAt"`,
          values: [request.projectId, normalizeAddress(request.address), request.mayReactivate],
        });
        const removed = rows[0];
        if (removed) {
          await recordAudit(client, { ...actorOf(request), action: 'suppression.remove', target: removed.address, detail: { reason: removed.reason } });
          return toProto(removed);
        }
        const listed = await client.query({
          name: 'suppression-listed',
          text: 'SELECT 1 FROM suppressions WHERE project_id = $1 AND address = $2',
          values: [request.projectId, normalizeAddress(request.address)],
        });
        if (listed.rowCount === 1) {
          throw new UserError(status.PERMISSION_DENIED, 'reactivate_required', 'an entry made by a hard bounce or a complaint needs suppressions:reactivate');
        }
        throw new UserError(status.NOT_FOUND, 'suppression_not_found', 'the address is not on the suppression list');
      });
    },
  };
}
