// GET /api/v1/messages/{message_id}/ and GET /api/v1/messages/ (docs/contract.md, "Reading messages"): the send
// endpoint's authentication, organization header and error shapes, then the key's own read bucket
// (NOTIFY_PUBLIC_READ_RATE), never the send one. dispatch-svc matches every lookup on project and organization, so
// another tenant's message answers exactly like one that does not exist.
import { status } from '@grpc/grpc-js';
import { RemoteError } from '@notify/platform';
import type { dispatch } from '@notify/proto';
import type { Middleware, ParameterizedContext } from 'koa';
import { type AdmitDeps, admit } from '../auth/admit.ts';
import { ApiError, FieldErrors } from '../errors/api-error.ts';
import { unexpectedRemoteFailure } from '../errors/dependency.ts';
import type { GatewayState } from '../http/state.ts';
import { text } from '../i18n/messages.ts';
import type { DispatchClient } from '../send/dispatch.ts';
import type { MessageReader } from './get-many.ts';
import { parseListQuery } from './read-query.ts';

export interface ReadRouteDeps extends AdmitDeps {
  readonly dispatch: DispatchClient;
}

export interface MessageEventBody {
  status: string;
  attempt: number;
  at: string;
  smtp_reply: string | null;
  reason: string | null;
}

export interface MessageBody {
  message_id: number;
  status: string;
  to: string;
  template: string;
  template_version: number;
  celery_task_id: string;
  attempts: number;
  created_at: string;
  updated_at: string;
  last_smtp_reply: string | null;
  failure_reason: string | null;
  /** The trace of the request that accepted it (docs/operations.md, "Traces"); null when it has none. */
  trace_id: string | null;
  /** The send's labels; [] and {} when it gave none (docs/contract.md, "Tags and metadata"). */
  tags: string[];
  metadata: Record<string, string>;
  /** Sent with a test key: never mailed, never counted against the quota. */
  test: boolean;
  /** When the caller asked it to be sent (RFC 3339, UTC); null for a message sent at once. */
  send_at: string | null;
  events?: MessageEventBody[];
}

const orNull = (value: string): string | null => (value === '' ? null : value);

function smtpReply(code: number, response: string): string | null {
  const reply = response.trim();
  if (code === 0) return orNull(reply);
  return reply.startsWith(String(code)) ? reply : `${code} ${reply}`.trim();
}

export function messageBody(message: dispatch.Message__Output, withEvents: boolean): MessageBody {
  const body: MessageBody = {
    message_id: message.id,
    status: message.state,
    to: message.to,
    template: message.template,
    template_version: message.templateVersion,
    celery_task_id: message.celeryTaskId,
    attempts: message.attempts,
    created_at: message.createdAt,
    updated_at: message.updatedAt,
    last_smtp_reply: orNull(message.lastSmtpReply),
    failure_reason: orNull(message.failureReason),
    trace_id: orNull(message.traceId),
    tags: message.tags,
    metadata: message.metadata,
    test: message.test,
    send_at: orNull(message.sendAt),
  };
  if (withEvents) {
    body.events = message.events.map((event) => ({
      status: event.state,
      attempt: event.attempt,
      at: event.occurredAt,
      smtp_reply: smtpReply(event.smtpCode, event.smtpResponse),
      reason: orNull(event.reason),
    }));
  }
  return body;
}

const messageNotFound = (cause?: unknown): ApiError => new ApiError(404, 'message_not_found', text('message_not_found'), { cause });

/** The path's message id; anything but an id this API could have given is a message that does not exist. */
function messageIdOf(ctx: ParameterizedContext<GatewayState>): number {
  const raw = String((ctx as unknown as { params: Record<string, string> }).params.messageId ?? '');
  const messageId = /^[1-9][0-9]{0,15}$/.test(raw) ? Number(raw) : 0;
  if (!Number.isSafeInteger(messageId) || messageId === 0) throw messageNotFound();
  return messageId;
}

/** Reads through `reader`: the GetMessage calls of reads that arrive together travel in one GetMessages call. */
export function getMessageRoute(deps: ReadRouteDeps, reader: MessageReader): Middleware<GatewayState> {
  return async (ctx) => {
    const access = await admit(deps, ctx, 'messages:read');
    const messageId = messageIdOf(ctx);
    try {
      const message = await reader.call({ projectId: access.projectId, organizationId: access.organizationId, messageId });
      ctx.body = messageBody(message, true);
    } catch (error) {
      if (error instanceof RemoteError && error.status === status.NOT_FOUND) throw messageNotFound(error);
      throw unexpectedRemoteFailure(error);
    }
  };
}

/**
 * DELETE /api/v1/messages/{message_id}/: cancels a scheduled message (200 with the message, now `canceled`), 409
 * not_cancelable once it is queued or later; any id not the key's project's is 404 as for a read. Counted against the
 * read bucket: it is the message-management side of the API, not a send.
 */
export function cancelMessageRoute(deps: ReadRouteDeps): Middleware<GatewayState> {
  return async (ctx) => {
    const access = await admit(deps, ctx, 'send');
    const messageId = messageIdOf(ctx);
    try {
      const message = await deps.dispatch.call('CancelMessage', { projectId: access.projectId, organizationId: access.organizationId, messageId });
      ctx.body = messageBody(message, true);
    } catch (error) {
      if (error instanceof RemoteError && error.status === status.NOT_FOUND) throw messageNotFound(error);
      if (error instanceof RemoteError && error.status === status.FAILED_PRECONDITION && error.reason === 'not_cancelable') {
        throw new ApiError(409, 'not_cancelable', text('not_cancelable'), { cause: error });
      }
      throw unexpectedRemoteFailure(error);
    }
  };
}

export function listMessagesRoute(deps: ReadRouteDeps): Middleware<GatewayState> {
  return async (ctx) => {
    const access = await admit(deps, ctx, 'messages:read');
    const query = parseListQuery(ctx.query);
    try {
      const page = await deps.dispatch.call('SearchProjectMessages', { projectId: access.projectId, organizationId: access.organizationId, ...query });
      ctx.body = { results: page.messages.map((message) => messageBody(message, false)), next: orNull(page.nextCursor) };
    } catch (error) {
      // The gateway judged every other parameter; what dispatch-svc can still refuse is the cursor.
      if (error instanceof RemoteError && error.status === status.INVALID_ARGUMENT)
        throw new FieldErrors(new Map([['cursor', [text('messages.cursor')]]]), { cause: error });
      throw unexpectedRemoteFailure(error);
    }
  };
}
