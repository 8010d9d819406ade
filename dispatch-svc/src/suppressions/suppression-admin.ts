// A project's suppression list, listed, added to and removed from: SuppressionAdminService for notifyctl (admin
// token), and the panel's two calls (PanelService, gateway token), which name the user's organization too.
import { status } from '@grpc/grpc-js';
import { type AsyncHandlers, UserError } from '@notify/platform';
import type { Pool } from '@notify/platform/database';
import type { DataKey } from '@notify/platform/mail';
import type { dispatch } from '@notify/proto';
import type { DispatchMetrics } from '../metrics.ts';
import {
  addSuppression,
  erasedEntryPattern,
  listSuppressions,
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
