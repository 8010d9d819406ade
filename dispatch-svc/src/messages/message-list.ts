// DispatchService.SearchProjectMessages: the public API's listing (and ListMessages, notifyctl's, below) (docs/contract.md, "Reading messages"). Newest first by
// acceptance time, keyset pages on (created_at, id), so a page never skips nor repeats a message while others are
// accepted. The cursor is opaque to callers: the last row's exact created_at (microseconds) and id, encoded, so it needs
// no lookup and names nothing of another tenant. Each statement holds only the filters in use, so the planner takes the
// index that starts with the project and the filtered column (migration web-panel).
import { status } from '@grpc/grpc-js';
import { UserError } from '@notify/platform';
import type { Pool } from '@notify/platform/database';
import { type dispatch, labelLimits } from '@notify/proto';
import { messageStates } from '../events/state-machine.ts';
import { tagPattern } from './labels.ts';
import { columns, type MessageRow, toMessage } from './queries.ts';

export const listLimits = { default: 50, max: 100 } as const;

export interface Cursor {
  /** created_at as microseconds since the Unix epoch: exact, unlike a JavaScript Date. */
  readonly createdMicros: bigint;
  readonly id: number;
}

const cursorVersion = 'v1';

export function encodeCursor(cursor: Cursor): string {
  return Buffer.from(`${cursorVersion}.${cursor.createdMicros}.${cursor.id}`, 'utf8').toString('base64url');
}

/** undefined for anything this service did not give out. */
export function decodeCursor(text: string): Cursor | undefined {
  if (!/^[A-Za-z0-9_-]{1,100}$/.test(text)) return undefined;
  const match = /^v1\.(-?\d{1,19})\.([1-9]\d{0,15})$/.exec(Buffer.from(text, 'base64url').toString('utf8'));
  if (!match?.[1] || !match[2]) return undefined;
  const id = Number(match[2]);
  return Number.isSafeInteger(id) ? { createdMicros: BigInt(match[1]), id } : undefined;
}

const rfc3339 = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d{1,6})?(Z|[+-]\d{2}:\d{2})$/i;

function parseTime(field: string, value: string, faults: string[]): Date | undefined {
  if (value === '') return undefined;
  const time = new Date(value);
  if (!rfc3339.test(value) || Number.isNaN(time.getTime())) faults.push(`${field}: must be an RFC 3339 time`);
  return time;
}

/**
 * One page of a project's messages, as both the status API's listing and the panel's search read it: filters already
 * validated, every lookup scoped to the project and its organization, the cursor a position and not a row to look up.
 */
export interface MessagePageQuery {
  readonly projectId: number;
  readonly organizationId: number;
  /** Each filter is ignored when empty or absent. */
  readonly state: string;
  readonly template: string;
  readonly recipient: string;
  readonly createdFrom?: Date | undefined;
  readonly createdBefore?: Date | undefined;
  readonly cursor?: Cursor | undefined;
  readonly limit: number;
  /** Messages sent with this tag; ignored when empty or absent. */
  readonly tag?: string | undefined;
}

/** The statement for one page, with only the filters in use; exported so a test can ask PostgreSQL how it runs it. */
export function pageStatement(query: MessagePageQuery): { text: string; values: unknown[]; limit: number } {
  const where = ['project_id = $1', 'organization_id = $2'];
  const values: unknown[] = [query.projectId, query.organizationId];
  const add = (condition: (placeholder: string) => string, value: unknown): void => {
    values.push(value);
    where.push(condition(`$${values.length}`));
  };
  if (query.state !== '') add((p) => `state = ${p}::message_state`, query.state);
  if (query.template !== '') add((p) => `template_slug = ${p}`, query.template);
  // lower() on both sides, matching the expression index.
  if (query.recipient !== '') add((p) => `lower(recipient) = lower(${p})`, query.recipient);
  if (query.createdFrom) add((p) => `created_at >= ${p}`, query.createdFrom);
  if (query.createdBefore) add((p) => `created_at < ${p}`, query.createdBefore);
  // The expression and the predicate of the partial GIN index on `<project>:<tag>` keys (migration message-tags).
  if (query.tag) add((p) => `tags <> '{}' AND message_tag_keys(project_id, tags) @> ARRAY[$1::text || ':' || ${p}]`, query.tag);
  if (query.cursor) {
    values.push(query.cursor.createdMicros.toString());
    add((p) => `(created_at, id) < (timestamptz 'epoch' + $${values.length - 1}::bigint * interval '1 microsecond', ${p})`, query.cursor.id);
  }
  // One row more than asked tells whether another page exists, without counting.
  values.push(query.limit + 1);
  const text = `SELECT ${columns}, (extract(epoch FROM created_at) * 1000000)::bigint::text AS "createdMicros"
                  FROM messages WHERE ${where.join(' AND ')} ORDER BY created_at DESC, id DESC LIMIT $${values.length}`;
  return { text, values, limit: query.limit };
}

export async function readMessagePage(pool: Pool, query: MessagePageQuery): Promise<{ messages: dispatch.Message__Output[]; nextCursor: string }> {
  const { text, values, limit } = pageStatement(query);
  const result = await pool.query<MessageRow & { createdMicros: string }>(text, values);
  const page = result.rows.slice(0, limit);
  const last = page.at(-1);
  const more = result.rows.length > limit && last !== undefined;
  return {
    messages: page.map((row) => toMessage(row, [])),
    nextCursor: more ? encodeCursor({ createdMicros: BigInt(last.createdMicros), id: last.id }) : '',
  };
}

/** The status API's listing request, checked: INVALID_ARGUMENT naming every parameter at fault. */
export function listQuery(request: dispatch.SearchProjectMessagesRequest__Output): MessagePageQuery {
  const faults: string[] = [];
  if (request.state !== '' && !(messageStates as readonly string[]).includes(request.state)) faults.push(`status: must be one of ${messageStates.join(', ')}`);
  const after = parseTime('created_after', request.createdAfter, faults);
  const before = parseTime('created_before', request.createdBefore, faults);
  const cursor = request.cursor === '' ? undefined : decodeCursor(request.cursor);
  if (request.cursor !== '' && !cursor) faults.push('cursor: is not one this service gave');
  if (request.limit < 0 || request.limit > listLimits.max) faults.push(`limit: must be between 1 and ${listLimits.max}`);
  faults.push(...tagFaults(request.tag));
  if (faults.length > 0) throw new UserError(status.INVALID_ARGUMENT, 'invalid_argument', `invalid listing: ${faults.join('; ')}`, { fields: faults });
  return {
    projectId: request.projectId,
    organizationId: request.organizationId,
    state: request.state,
    template: request.template,
    recipient: request.to,
    createdFrom: after,
    createdBefore: before,
    cursor,
    limit: request.limit === 0 ? listLimits.default : request.limit,
    tag: request.tag,
  };
}

/** A tag filter is one tag as a send gives it, or none. */
export function tagFaults(tag: string): string[] {
  return tag === '' || tagPattern.test(tag) ? [] : [`tag: must be 1-${labelLimits.tagLength} characters of A-Z, a-z, 0-9, _ and -`];
}

export async function searchProjectMessages(
  pool: Pool,
  request: dispatch.SearchProjectMessagesRequest__Output,
): Promise<dispatch.SearchProjectMessagesResponse__Output> {
  return readMessagePage(pool, listQuery(request));
}

/** notifyctl's pages (ListMessages, ListDeadLetters) may be longer than the API's. */
const notifyctlListLimits = { default: 50, max: 500 } as const;

/**
 * Newest first by acceptance time, like the status API's listing and the panel's, through the same statement and so the
 * same indexes: `before_id` names the last message of the previous page and the listing goes on from its place in
 * (created_at, id) order; `nextBeforeId` is 0 when this page is the last. Events are left out. An id no message has
 * (one purged, a sequence gap, the id after the newest) stands for the place just after the greatest id below it; so
 * `--before N+1 --limit 1` still reads message N, as scripts do. The place is found through the primary key alone
 * (one row), whichever project holds that message, and only its place is used.
 */
export async function listMessages(pool: Pool, request: dispatch.ListMessagesRequest__Output): Promise<dispatch.ListMessagesResponse__Output> {
  if (request.state !== '' && !(messageStates as readonly string[]).includes(request.state)) {
    const field = `state: must be one of ${messageStates.join(', ')}`;
    throw new UserError(status.INVALID_ARGUMENT, 'invalid_argument', field, { fields: [field] });
  }
  const limit = request.limit <= 0 ? notifyctlListLimits.default : Math.min(request.limit, notifyctlListLimits.max);
  // The page statement is scoped to the organization too, which notifyctl does not name; the cursor's place comes with
  // it, exact to the microsecond. A project that does not exist lists nothing.
  const found = await pool.query<{ organizationId: number; anchorId: number | null; createdMicros: string | null }>({
    name: 'message-list-position',
    text: `SELECT p.organization_id AS "organizationId", a.id AS "anchorId",
                  (extract(epoch FROM a.created_at) * 1000000)::bigint::text AS "createdMicros"
             FROM projects p
             LEFT JOIN LATERAL (SELECT id, created_at FROM messages WHERE $2::bigint > 0 AND id <= $2 ORDER BY id DESC LIMIT 1) a ON true
            WHERE p.id = $1`,
    values: [request.projectId, request.beforeId],
  });
  const position = found.rows[0];
  if (!position) return { messages: [], nextBeforeId: 0 };
  // No message has an id up to the cursor's: none comes after it.
  if (request.beforeId > 0 && position.createdMicros === null) return { messages: [], nextBeforeId: 0 };
  // The message the cursor names is on the page before; the one found below an id no message has is on this one.
  const anchorId = Number(position.anchorId);
  const cursorId = anchorId === request.beforeId ? anchorId : anchorId + 1;
  const page = await readMessagePage(pool, {
    projectId: request.projectId,
    organizationId: position.organizationId,
    state: request.state,
    template: '',
    recipient: '',
    cursor: position.createdMicros === null ? undefined : { createdMicros: BigInt(position.createdMicros), id: cursorId },
    limit,
  });
  return { messages: page.messages, nextBeforeId: page.nextCursor === '' ? 0 : (page.messages.at(-1)?.id ?? 0) };
}
