// DeadLetterAdminService (notifyctl, admin token): listing a project's failed messages and re-queueing them.
import { status } from '@grpc/grpc-js';
import { type AsyncHandlers, UserError } from '@notify/platform';
import type { dispatch } from '@notify/proto';
import { listMessages } from '../messages/message-list.ts';
import { type RequeueDeps, requeueAllMessages, requeueMessages } from './requeue.ts';

/** Most messages one RequeueDeadLetters call may name; `all` has no such limit. */
export const maxRequeueIds = 1_000;

const isPositiveId = (value: number): boolean => Number.isSafeInteger(value) && value > 0;

function invalid(faults: string[]): UserError {
  return new UserError(status.INVALID_ARGUMENT, 'invalid_argument', `invalid request: ${faults.join('; ')}`, { fields: faults });
}

export function deadLetterAdminHandlers(deps: RequeueDeps): AsyncHandlers<dispatch.DeadLetterAdminServiceDefinition> {
  return {
    async ListDeadLetters(request) {
      const faults: string[] = [];
      if (!isPositiveId(request.projectId)) faults.push('project_id: must be a positive integer');
      if (request.limit < 0 || request.limit > 500) faults.push('limit: must be between 1 and 500 (0 for the default)');
      if (request.beforeId < 0) faults.push('before_id: must not be negative');
      if (faults.length > 0) throw invalid(faults);
      return listMessages(deps.pool, { projectId: request.projectId, state: 'failed', limit: request.limit, beforeId: request.beforeId });
    },
    async RequeueDeadLetters(request) {
      const faults: string[] = [];
      if (!isPositiveId(request.projectId)) faults.push('project_id: must be a positive integer');
      if (request.all === request.messageIds.length > 0) faults.push('message_ids: give message ids or all, not both and not neither');
      if (request.messageIds.length > maxRequeueIds) faults.push(`message_ids: at most ${maxRequeueIds} per call (or all)`);
      if (!request.messageIds.every(isPositiveId)) faults.push('message_ids: must be positive integers');
      if (faults.length > 0) throw invalid(faults);
      const result = request.all ? await requeueAllMessages(deps, request.projectId) : await requeueMessages(deps, request.projectId, request.messageIds);
      return { requeued: result.requeued, skipped: result.skipped };
    },
  };
}
