// Checks 10 and 12-14 happen in dispatch-svc (idempotency record, template, data, acceptance in one transaction), and
// it keeps the monthly usage check 5 compares with the quota; this makes the calls and maps dispatch-svc's answers onto
// the contract's statuses and bodies.
import { status } from '@grpc/grpc-js';
import { RemoteError, type GrpcClient } from '@notify/platform';
import type { dispatch } from '@notify/proto';
import { planBlocked } from '../auth/plan.ts';
import { ApiError, FieldErrors } from '../errors/api-error.ts';
import { unexpectedRemoteFailure } from '../errors/dependency.ts';
import { text } from '../i18n/messages.ts';
import { variableFault } from './variable-faults.ts';

export type DispatchClient = GrpcClient<dispatch.DispatchServiceDefinition>;

/** The 202 body, exactly the seed's four fields. */
export interface AcceptedBody {
  message_id: number;
  status: string;
  celery_task_id: string;
  idempotent_replay: boolean;
}

function acceptedBody(response: dispatch.SendResponse__Output): AcceptedBody {
  return {
    message_id: response.messageId,
    status: response.status,
    celery_task_id: response.celeryTaskId,
    idempotent_replay: response.idempotentReplay,
  };
}

export async function dispatchSend(client: DispatchClient, request: dispatch.SendRequest): Promise<AcceptedBody> {
  try {
    return acceptedBody(await client.call('Send', request));
  } catch (error) {
    throw refusalOf(error);
  }
}

/**
 * Check 10 ahead of field validation: the stored 202 body when this is a replay, undefined when the key is free (Send
 * judges it again, atomically); a key in flight or used with another body is refused as Send would refuse it.
 */
export async function findReplay(client: DispatchClient, request: dispatch.CheckIdempotencyRequest): Promise<AcceptedBody | undefined> {
  let response: dispatch.CheckIdempotencyResponse__Output;
  try {
    response = await client.call('CheckIdempotency', request);
  } catch (error) {
    throw refusalOf(error);
  }
  return response.replay ? acceptedBody(response.replay) : undefined;
}

/** Messages the organization had accepted this calendar month (UTC). */
export async function acceptedThisMonth(client: DispatchClient, organizationId: number): Promise<number> {
  try {
    return (await client.call('GetUsage', { organizationId })).accepted;
  } catch (error) {
    throw unexpectedRemoteFailure(error);
  }
}

/** The error the caller sees for a failed call: each (status, reason) dispatch-svc documents, 503 when it is down, else a bug. */
export function refusalOf(error: unknown): unknown {
  if (!(error instanceof RemoteError)) return error;
  const is = (code: status, reason: string): boolean => error.status === code && error.reason === reason;
  if (is(status.NOT_FOUND, 'template_not_found')) return new ApiError(404, 'template_not_found', text('template_not_found'), { cause: error });
  if (is(status.FAILED_PRECONDITION, 'template_inactive')) return FieldErrors.of('template', text('template.inactive'));
  if (is(status.INVALID_ARGUMENT, 'data_invalid')) {
    // dispatch-svc names what the template's declared variables refused, rendered here in the caller's language;
    // without that, a general message.
    return error.fields.length > 0 ? FieldErrors.of('data', ...error.fields.map(variableFault)) : FieldErrors.of('data', text('data.invalid'));
  }
  if (is(status.FAILED_PRECONDITION, 'idempotency_key_mismatch')) return FieldErrors.of('Idempotency-Key', text('idempotency_key.mismatch'));
  if (is(status.ABORTED, 'idempotency_key_in_use')) {
    return new ApiError(409, 'idempotency_key_in_use', text('idempotency_key_in_use'), { headers: { 'Retry-After': '1' }, cause: error });
  }
  // The quota was used up by requests that passed check 5 together with this one.
  if (is(status.FAILED_PRECONDITION, 'plan_blocked')) return planBlocked(error);
  return unexpectedRemoteFailure(error);
}
