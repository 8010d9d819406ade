// DispatchService.GetMessage, and a message as every listing reads it (message-list.ts). A message of another project
// or organization is indistinguishable from one that does not exist.
import { status } from '@grpc/grpc-js';
import { traceIdOf, UserError } from '@notify/platform';
import { batchRows, type Pool, type RowColumn } from '@notify/platform/database';
import type { dispatch } from '@notify/proto';
import type { MessageState } from '../events/state-machine.ts';

export interface MessageRow {
  id: number;
  projectId: number;
  organizationId: number;
  template: string;
  templateVersion: number;
  to: string;
  state: MessageState;
  celeryTaskId: string;
  idempotencyKey: string | null;
  attempts: number;
  lastSmtpCode: number | null;
  lastSmtpResponse: string | null;
  failureReason: string | null;
  createdAt: Date;
  updatedAt: Date;
  traceparent: string | null;
  tags: string[];
  metadata: Record<string, string>;
  test: boolean;
  sendAt: Date | null;
}

export interface EventRow {
  state: MessageState;
  attempt: number;
  smtpCode: number | null;
  smtpResponse: string | null;
  reason: string | null;
  /** RFC 3339 in UTC with milliseconds, as Date.prototype.toISOString writes it. */
  occurredAt: string;
}

export const columns = `id, project_id AS "projectId", organization_id AS "organizationId", template_slug AS template,
                 template_version AS "templateVersion", recipient AS "to", state, celery_task_id AS "celeryTaskId",
                 idempotency_key AS "idempotencyKey", attempts, last_smtp_code AS "lastSmtpCode",
                 last_smtp_response AS "lastSmtpResponse", failure_reason AS "failureReason",
                 created_at AS "createdAt", updated_at AS "updatedAt", traceparent,
                 tags, metadata, test, send_at AS "sendAt"`;

/** The SMTP reply as one line, code first, whether or not the relay's text already starts with it. */
export function formatSmtpReply(code: number | null, response: string | null): string {
  const text = (response ?? '').trim();
  if (code === null) return text;
  return text.startsWith(String(code)) ? text : `${code} ${text}`.trim();
}

export function toMessage(row: MessageRow, events: EventRow[]): dispatch.Message__Output {
  return {
    id: row.id,
    projectId: row.projectId,
    organizationId: row.organizationId,
    template: row.template,
    templateVersion: row.templateVersion,
    to: row.to,
    state: row.state,
    celeryTaskId: row.celeryTaskId,
    idempotencyKey: row.idempotencyKey ?? '',
    attempts: row.attempts,
    lastSmtpReply: formatSmtpReply(row.lastSmtpCode, row.lastSmtpResponse),
    failureReason: row.failureReason ?? '',
    createdAt: row.createdAt.toISOString(),
    updatedAt: row.updatedAt.toISOString(),
    traceId: traceIdOf(row.traceparent) ?? '',
    tags: row.tags,
    metadata: row.metadata,
    test: row.test,
    sendAt: row.sendAt?.toISOString() ?? '',
    events: events.map((event) => ({
      state: event.state,
      attempt: event.attempt,
      smtpCode: event.smtpCode ?? 0,
      smtpResponse: event.smtpResponse ?? '',
      reason: event.reason ?? '',
      occurredAt: event.occurredAt,
    })),
  };
}

/** A read as the rows of messages-get (batchRows), and one that finds nothing, to pad a batch with. */
const readColumns: readonly RowColumn<dispatch.GetMessageRequest__Output>[] = [
  { type: 'bigint', value: (request) => request.messageId },
  { type: 'bigint', value: (request) => request.projectId },
  { type: 'bigint', value: (request) => request.organizationId },
];
const noMessage: dispatch.GetMessageRequest__Output = { messageId: 0, projectId: 0, organizationId: 0 };

/**
 * The messages `requests` name, each with its transitions in lifecycle order (attempt, then position within the
 * attempt), in one statement whatever their number; a result per request, in order. Matched on project and
 * organization both: a request that names the wrong one is refused NOT_FOUND exactly as one for an id that never existed.
 */
export async function getMessages(
  pool: Pool,
  requests: readonly dispatch.GetMessageRequest__Output[],
): Promise<PromiseSettledResult<dispatch.Message__Output>[]> {
  const wanted = batchRows('messages-get', requests, readColumns, { ordinality: true, filler: noMessage });
  const found = await pool.query<MessageRow & { position: string; events: EventRow[] }>({
    name: wanted.name,
    text: `SELECT wanted.position, ${columns},
                  coalesce((SELECT json_agg(json_build_object('state', e.state, 'attempt', e.attempt, 'smtpCode', e.smtp_code, 'smtpResponse', e.smtp_response,
                                                              'reason', e.reason, 'occurredAt', to_char(e.occurred_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"'))
                                            ORDER BY e.attempt, CASE e.state WHEN 'scheduled' THEN -1 WHEN 'queued' THEN 0 WHEN 'sending' THEN 1 WHEN 'deferred' THEN 2
                                                                             WHEN 'bounced' THEN 4 WHEN 'complained' THEN 4 ELSE 3 END, e.occurred_at, e.id)
                              FROM message_events e WHERE e.message_id = messages.id), '[]') AS events
             FROM ${wanted.rows} AS wanted(message, project, organization, position)
             JOIN messages ON messages.id = wanted.message AND messages.project_id = wanted.project AND messages.organization_id = wanted.organization`,
    values: wanted.values,
  });
  const byPosition = new Map(found.rows.map((row) => [Number(row.position), row]));
  return requests.map((request, index) => {
    const row = byPosition.get(index + 1);
    if (row) return { status: 'fulfilled', value: toMessage(row, row.events) };
    return { status: 'rejected', reason: new UserError(status.NOT_FOUND, 'message_not_found', `no message ${request.messageId} in this project`) };
  });
}

/** One message as getMessages reads it: NOT_FOUND message_not_found for any id not the project's and organization's. */
export async function getMessage(pool: Pool, request: dispatch.GetMessageRequest__Output): Promise<dispatch.Message__Output> {
  const [result] = await getMessages(pool, [request]);
  if (result?.status !== 'fulfilled') throw result?.reason;
  return result.value;
}
