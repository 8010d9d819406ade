// AuditAdminService (notifyctl, admin token): reading the audit log the management API's changes write
// (platform/src/database/audit-log.ts), newest first, a page at a time.
import { status } from '@grpc/grpc-js';
import { type AsyncHandlers, UserError } from '@notify/platform';
import { type Pool, readAuditEvents } from '@notify/platform/database';
import type { dispatch } from '@notify/proto';

export const auditPageLimits = { default: 50, max: 500 } as const;

export function auditAdminHandlers(deps: { pool: Pool }): AsyncHandlers<dispatch.AuditAdminServiceDefinition> {
  return {
    async ListAuditEvents(request) {
      const faults = [
        !(Number.isSafeInteger(request.organizationId) && request.organizationId > 0) && 'organization_id: must be a positive integer',
        request.projectId < 0 && 'project_id: must not be negative',
        (request.limit < 0 || request.limit > auditPageLimits.max) && `limit: must be between 1 and ${auditPageLimits.max} (0 for the default)`,
        request.beforeId < 0 && 'before_id: must not be negative',
      ].filter((fault): fault is string => typeof fault === 'string');
      if (faults.length > 0) throw new UserError(status.INVALID_ARGUMENT, 'invalid_argument', `invalid request: ${faults.join('; ')}`, { fields: faults });
      const limit = request.limit || auditPageLimits.default;
      const events = await readAuditEvents(deps.pool, {
        organizationId: request.organizationId,
        projectId: request.projectId,
        before: request.beforeId,
        limit,
      });
      return {
        events: events.map((event) => ({ ...event, detailJson: JSON.stringify(event.detail), createdAt: event.createdAt.toISOString() })),
        nextBeforeId: events.length === limit ? (events.at(-1)?.id ?? 0) : 0,
      };
    },
  };
}
