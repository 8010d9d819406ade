// DispatchService's GetApiStats for the public API (gateway token): the statistics of the caller's project, matched on
// project and organization. The gateway has judged the query already; what reaches here is checked again by the same
// rules (@notify/proto's checkStatsRange), so no caller of this service can ask for an unbounded read.
import { status } from '@grpc/grpc-js';
import { type AsyncHandlers, UserError } from '@notify/platform';
import type { Pool } from '@notify/platform/database';
import { checkStatsRange, type dispatch, labelCharacters, labelLimits } from '@notify/proto';
import { ensureOwned } from '../suppressions/suppression-admin.ts';
import { readStats } from './stats-store.ts';

const tagExpression = new RegExp(`^${labelCharacters}{1,${labelLimits.tagLength}}$`);

export function apiStatsHandlers(deps: { pool: Pool }): Pick<AsyncHandlers<dispatch.DispatchServiceDefinition>, 'GetApiStats'> {
  return {
    async GetApiStats(request) {
      const { faults, range } = checkStatsRange(request);
      const fields = faults.map((fault) => `${fault.field}: ${fault.problem}`);
      if (request.tag !== '' && !tagExpression.test(request.tag)) fields.push('tag: not a tag');
      if (fields.length > 0 || !range) throw new UserError(status.INVALID_ARGUMENT, 'invalid_argument', `invalid request: ${fields.join('; ')}`, { fields });
      await ensureOwned(deps.pool, request.organizationId, request.projectId);
      const {
        bounced_hard: bouncedHard,
        bounced_soft: bouncedSoft,
        ...series
      } = await readStats(deps.pool, { projectId: request.projectId, tag: request.tag, range });
      return { ...series, bouncedHard, bouncedSoft };
    },
  };
}
