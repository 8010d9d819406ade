// Erasure's two doors: ErasureAdminService for notifyctl (admin token) and the panel's operator form (PanelService,
// gateway token), which names the user's organization too. The log says what changed, never whose address it was.
import { status } from '@grpc/grpc-js';
import { type AsyncHandlers, type Logger, UserError } from '@notify/platform';
import type { Pool } from '@notify/platform/database';
import type { DataKey } from '@notify/platform/mail';
import type { dispatch } from '@notify/proto';
import type { DispatchMetrics } from '../metrics.ts';
import { ensureOwned, isAddress } from '../suppressions/suppression-admin.ts';
import { type Erasure, eraseRecipient } from './erase-recipient.ts';

export interface ErasureDeps {
  readonly pool: Pool;
  /** NOTIFY_DATA_KEY: keys the hash an erased suppression keeps. */
  readonly dataKey: DataKey;
  readonly logger: Logger;
  readonly metrics: Pick<DispatchMetrics, 'erasures' | 'erasedMessages' | 'scheduledCanceled'>;
}

function check(projectId: number, address: string): void {
  const faults = [
    !(Number.isSafeInteger(projectId) && projectId > 0) && 'project_id: must be a positive integer',
    !isAddress(address) && 'address: must be one email address',
  ].filter((fault): fault is string => fault !== false);
  if (faults.length > 0) throw new UserError(status.INVALID_ARGUMENT, 'invalid_argument', `invalid request: ${faults.join('; ')}`, { fields: faults });
}

async function erase(deps: ErasureDeps, projectId: number, address: string, origin: 'notifyctl' | 'panel'): Promise<dispatch.EraseRecipientResponse__Output> {
  const erasure: Erasure = await eraseRecipient(deps.pool, deps.dataKey, projectId, address);
  deps.metrics.erasures.inc({ origin });
  deps.metrics.erasedMessages.inc({ origin }, erasure.messages);
  deps.metrics.scheduledCanceled.inc({ origin: 'erasure' }, erasure.canceled);
  deps.logger.info({ projectId, origin, ...erasure }, 'recipient erased');
  return { ...erasure };
}

export function erasureAdminHandlers(deps: ErasureDeps): AsyncHandlers<dispatch.ErasureAdminServiceDefinition> {
  return {
    async EraseRecipient(request) {
      check(request.projectId, request.address);
      return erase(deps, request.projectId, request.address, 'notifyctl');
    },
  };
}

export function panelErasureHandlers(deps: ErasureDeps): Pick<AsyncHandlers<dispatch.PanelServiceDefinition>, 'EraseProjectRecipient'> {
  return {
    async EraseProjectRecipient(request) {
      check(request.projectId, request.address);
      await ensureOwned(deps.pool, request.organizationId, request.projectId);
      return erase(deps, request.projectId, request.address, 'panel');
    },
  };
}
