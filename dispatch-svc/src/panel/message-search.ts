// PanelService.SearchMessages: a project's messages newest first by acceptance time, filtered by state, template,
// recipient and time, a page at a time. Pages are cut by keyset on (created_at, id), never by offset, and the SQL holds
// only the filters in use, so the planner picks the index that starts with the project and the filtered column
// (migration web-panel) and a page reads only about the rows it returns, however many messages the project has.
import { status } from '@grpc/grpc-js';
import { UserError } from '@notify/platform';
import type { Pool } from '@notify/platform/database';
import type { dispatch } from '@notify/proto';
import { messageStates } from '../events/state-machine.ts';
import { columns, toMessage, type MessageRow } from '../messages/queries.ts';

export const searchLimits = { default: 50, max: 500 } as const;

/**
 * The cursor is the id of the last message of the previous page: the query reads that message's exact (created_at,
 * id), so no timestamp has to survive a round trip through JavaScript's millisecond dates.
 */
const cursorPattern = /^[1-9][0-9]{0,15}$/;

function invalid(faults: string[]): UserError {
  return new UserError(status.INVALID_ARGUMENT, 'invalid_argument', `invalid search: ${faults.join('; ')}`, { fields: faults });
}

function parseTime(field: string, value: string, faults: string[]): Date | undefined {
  if (value === '') return undefined;
  const time = new Date(value);
  if (Number.isNaN(time.getTime())) faults.push(`${field}: must be an ISO-8601 time`);
  return time;
}

/** The WHERE clause and parameters for the filters in use; $1 and $2 are always the project and organization. */
function conditions(request: dispatch.SearchMessagesRequest__Output): { where: string[]; values: unknown[] } {
  const faults: string[] = [];
  if (request.state !== '' && !(messageStates as readonly string[]).includes(request.state)) faults.push(`state: must be one of ${messageStates.join(', ')}`);
  const from = parseTime('created_from', request.createdFrom, faults);
  const until = parseTime('created_until', request.createdUntil, faults);
  if (request.cursor !== '' && !cursorPattern.test(request.cursor)) faults.push('cursor: is not one this service gave');
  if (request.limit < 0) faults.push(`limit: must be between 1 and ${searchLimits.max} (0 for the default)`);
  if (faults.length > 0) throw invalid(faults);

  const where = ['project_id = $1', 'organization_id = $2'];
  const values: unknown[] = [request.projectId, request.organizationId];
  const add = (condition: (placeholder: string) => string, value: unknown): void => {
    values.push(value);
    where.push(condition(`$${values.length}`));
  };
  if (request.state !== '') add((p) => `state = ${p}::message_state`, request.state);
  if (request.template !== '') add((p) => `template_slug = ${p}`, request.template);
  // lower() on both sides, matching the expression index.
  if (request.recipient.trim() !== '') add((p) => `lower(recipient) = lower(${p})`, request.recipient.trim());
  if (from) add((p) => `created_at >= ${p}`, from);
  if (until) add((p) => `created_at < ${p}`, until);
  if (request.cursor !== '') add((p) => `(created_at, id) < (SELECT created_at, id FROM messages WHERE id = ${p})`, Number(request.cursor));
  return { where, values };
}

/** The statement for one page, with only the filters in use; exported so a test can ask PostgreSQL how it runs it. */
export function searchStatement(request: dispatch.SearchMessagesRequest__Output): { text: string; values: unknown[]; limit: number } {
  const { where, values } = conditions(request);
  const limit = request.limit === 0 ? searchLimits.default : Math.min(request.limit, searchLimits.max);
  // One row more than asked tells whether another page exists, without counting.
  values.push(limit + 1);
  const text = `SELECT ${columns} FROM messages WHERE ${where.join(' AND ')} ORDER BY created_at DESC, id DESC LIMIT $${values.length}`;
  return { text, values, limit };
}

export async function searchMessages(pool: Pool, request: dispatch.SearchMessagesRequest__Output): Promise<dispatch.SearchMessagesResponse__Output> {
  const { text, values, limit } = searchStatement(request);
  const result = await pool.query<MessageRow>(text, values);
  const page = result.rows.slice(0, limit);
  const last = page.at(-1);
  return { messages: page.map((row) => toMessage(row, [])), nextCursor: result.rows.length > limit && last ? String(last.id) : '' };
}
