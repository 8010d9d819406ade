// Checks 10-14 happen in dispatch-svc, in one Send per request (idempotency record, the verdict of the gateway's field
// validation, template, data, quota and acceptance in one transaction), carried with the sends that arrive together in
// one SendMany call (send-many.ts); it also keeps the monthly usage check 5 compares with the quota. This makes the
// calls and maps dispatch-svc's answers onto the contract's statuses and bodies.
import { status } from '@grpc/grpc-js';
import { type GrpcClient, type Refusal, RemoteError } from '@notify/platform';
import type { AcceptedBody, dispatch } from '@notify/proto';
import { planBlocked } from '../auth/plan.ts';
import { ApiError, FieldErrors } from '../errors/api-error.ts';
import { unexpectedRemoteFailure } from '../errors/dependency.ts';
import { text } from '../i18n/messages.ts';
import type { SendDispatcher } from './send-many.ts';
import { variableFault } from './variable-faults.ts';

export type DispatchClient = GrpcClient<dispatch.DispatchServiceDefinition>;

function acceptedBody(response: dispatch.SendResponse__Output): AcceptedBody {
  const body: AcceptedBody = {
    message_id: response.messageId,
    status: response.status,
    celery_task_id: response.celeryTaskId,
    idempotent_replay: response.idempotentReplay,
  };
  if (response.sendAt !== '') body.send_at = response.sendAt;
  return body;
}

/**
 * What Send answered: the 202 body, the organization's count of messages this month once this one was counted (0 for
 * a replay), and how long the key's record replays it (0 without a key).
 */
export interface SendAnswer {
  readonly accepted: AcceptedBody;
  readonly organizationAccepted: number;
  readonly replayableForMs: number;
}

/**
 * The one call of a send. `fieldErrors` are the gateway's own verdict on the body (check 11), sent along as
 * `fields_invalid`: they are what the caller gets when the idempotency record (check 10) decides nothing.
 */
export async function dispatchSend(sends: SendDispatcher, request: dispatch.SendRequest, fieldErrors?: FieldErrors): Promise<SendAnswer> {
  try {
    const response = await sends.call(request);
    return { accepted: acceptedBody(response), organizationAccepted: response.organizationAccepted, replayableForMs: response.replayableForMs };
  } catch (error) {
    throw refusalOf(error, fieldErrors);
  }
}

/** Messages the organization had accepted this calendar month (UTC). */
export async function acceptedThisMonth(client: DispatchClient, organizationId: number): Promise<number> {
  try {
    return (await client.call('GetUsage', { organizationId })).accepted;
  } catch (error) {
    throw unexpectedRemoteFailure(error);
  }
}

/**
 * The error the caller sees for a failed call: each (status, reason) dispatch-svc documents, 503 when it is down, else
 * a bug. `fields_invalid` answers with the gateway's own field errors, the ones it sent the call with.
 */
export function refusalOf(error: unknown, fieldErrors?: FieldErrors): unknown {
  if (!(error instanceof RemoteError)) return error;
  return refusalFor({ code: error.status, reason: error.reason, fields: [...error.fields] }, fieldErrors, error);
}

/**
 * refusalOf for a refusal already known to come from dispatch-svc: a failed Send's, or an item's of SendBatch's answer.
 * `cause` (the failed call's RemoteError) is what a 503 or a bug keeps for its log line.
 */
export function refusalFor(refusal: Refusal, fieldErrors?: FieldErrors, cause: unknown = refusal): unknown {
  const is = (code: status, reason: string): boolean => refusal.code === code && refusal.reason === reason;
  if (is(status.INVALID_ARGUMENT, 'fields_invalid') && fieldErrors) return fieldErrors;
  if (is(status.NOT_FOUND, 'template_not_found')) return new ApiError(404, 'template_not_found', text('template_not_found'), { cause });
  if (is(status.FAILED_PRECONDITION, 'template_inactive')) return FieldErrors.of('template', text('template.inactive'));
  if (is(status.INVALID_ARGUMENT, 'data_invalid')) {
    // dispatch-svc names what the template's declared variables refused, rendered here in the caller's language;
    // without that, a general message.
    return refusal.fields.length > 0 ? FieldErrors.of('data', ...refusal.fields.map(variableFault)) : FieldErrors.of('data', text('data.invalid'));
  }
  // A value PostgreSQL cannot store, such as U+0000 in a string of the data: found only when the send is written.
  if (is(status.INVALID_ARGUMENT, 'data_unstorable')) return FieldErrors.of('data', text('data.unstorable'));
  if (is(status.FAILED_PRECONDITION, 'recipient_suppressed')) {
    const [reason = 'manual', since = ''] = refusal.fields;
    return FieldErrors.of('to', text('to.suppressed', { reason, since }));
  }
  if (is(status.PERMISSION_DENIED, 'from_domain_not_allowed')) {
    const [domain = '', ...allowed] = refusal.fields;
    const detail =
      domain === '' ? text('from.required_by_key', { allowed: allowed.join(', ') }) : text('from.not_allowed', { domain, allowed: allowed.join(', ') });
    return new ApiError(403, 'from_domain_not_allowed', detail, { cause });
  }
  if (is(status.INVALID_ARGUMENT, 'from_domain_unverified')) return FieldErrors.of('from', text('from.unverified', { domain: refusal.fields[0] ?? '' }));
  if (is(status.FAILED_PRECONDITION, 'idempotency_key_mismatch')) return FieldErrors.of('Idempotency-Key', text('idempotency_key.mismatch'));
  if (is(status.ABORTED, 'idempotency_key_in_use')) {
    return new ApiError(409, 'idempotency_key_in_use', text('idempotency_key_in_use'), { headers: { 'Retry-After': '1' }, cause });
  }
  // The quota was used up by requests that passed check 5 together with this one.
  if (is(status.FAILED_PRECONDITION, 'plan_blocked')) return planBlocked(cause);
  // The message's job would not fit in a JetStream message; the limit in bytes is the first field.
  if (is(status.RESOURCE_EXHAUSTED, 'payload_too_large'))
    return new ApiError(413, 'payload_too_large', text('message_too_large', { limit: refusal.fields[0] ?? '' }), { cause });
  // The call itself was over the gRPC message limit (its data grew when serialized): the request is too large, not a fault.
  if (refusal.code === status.RESOURCE_EXHAUSTED) return new ApiError(413, 'payload_too_large', text('request_too_large'), { cause });
  return unexpectedRemoteFailure(cause);
}
