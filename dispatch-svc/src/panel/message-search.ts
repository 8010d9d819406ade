// PanelService.SearchMessages: a project's messages newest first by acceptance time, filtered by state, template,
// recipient and time, a page at a time. The very query of the status API's listing (messages/message-list.ts): keyset
// pages on (created_at, id), every condition scoped to the project and its organization, and an opaque cursor that
// carries its own position, so no lookup by a caller-given id can tell whether another tenant's message exists.
import { status } from '@grpc/grpc-js';
import { UserError } from '@notify/platform';
import type { Pool } from '@notify/platform/database';
import type { dispatch } from '@notify/proto';
import { messageStates } from '../events/state-machine.ts';
import { decodeCursor, type MessagePageQuery, readMessagePage, tagFaults } from '../messages/message-list.ts';

export const searchLimits = { default: 50, max: 500 } as const;

function parseTime(field: string, value: string, faults: string[]): Date | undefined {
  if (value === '') return undefined;
  const time = new Date(value);
  if (Number.isNaN(time.getTime())) faults.push(`${field}: must be an ISO-8601 time`);
  return time;
}

/** The panel's search request, checked: INVALID_ARGUMENT naming every field at fault. */
export function searchQuery(request: dispatch.SearchMessagesRequest__Output): MessagePageQuery {
  const faults: string[] = [];
  if (request.state !== '' && !(messageStates as readonly string[]).includes(request.state)) faults.push(`state: must be one of ${messageStates.join(', ')}`);
  const from = parseTime('created_from', request.createdFrom, faults);
  const until = parseTime('created_until', request.createdUntil, faults);
  const cursor = request.cursor === '' ? undefined : decodeCursor(request.cursor);
  if (request.cursor !== '' && !cursor) faults.push('cursor: is not one this service gave');
  if (request.limit < 0) faults.push(`limit: must be between 1 and ${searchLimits.max} (0 for the default)`);
  faults.push(...tagFaults(request.tag));
  if (faults.length > 0) throw new UserError(status.INVALID_ARGUMENT, 'invalid_argument', `invalid search: ${faults.join('; ')}`, { fields: faults });
  return {
    projectId: request.projectId,
    organizationId: request.organizationId,
    state: request.state,
    template: request.template,
    recipient: request.recipient.trim(),
    createdFrom: from,
    createdBefore: until,
    cursor,
    limit: request.limit === 0 ? searchLimits.default : Math.min(request.limit, searchLimits.max),
    tag: request.tag,
  };
}

export async function searchMessages(pool: Pool, request: dispatch.SearchMessagesRequest__Output): Promise<dispatch.SearchMessagesResponse__Output> {
  return readMessagePage(pool, searchQuery(request));
}
