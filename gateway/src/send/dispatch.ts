// Checks 10 and 12-14 happen in dispatch-svc (idempotency record, template, data, acceptance in one transaction);
// this maps its answers onto the contract's statuses and bodies.
import { status } from '@grpc/grpc-js';
import { RemoteError, type GrpcClient } from '@notify/platform';
import type { dispatch } from '@notify/proto';
import { ApiError, FieldErrors } from '../errors/api-error.ts';
import { unexpectedRemoteFailure } from '../errors/dependency.ts';
import { text } from '../i18n/messages.ts';

export type DispatchClient = GrpcClient<dispatch.DispatchServiceDefinition>;

/** The 202 body, exactly the seed's four fields. */
export interface AcceptedBody {
  message_id: number;
  status: string;
  celery_task_id: string;
  idempotent_replay: boolean;
}

export async function dispatchSend(client: DispatchClient, request: dispatch.SendRequest): Promise<AcceptedBody> {
  let response: dispatch.SendResponse__Output;
  try {
    response = await client.call('Send', request);
  } catch (error) {
    throw refusalOf(error);
  }
  return {
    message_id: response.messageId,
    status: response.status,
    celery_task_id: response.celeryTaskId,
    idempotent_replay: response.idempotentReplay,
  };
}

/** The error the caller sees for a failed Send: each (status, reason) dispatch-svc documents, 503 when it is down, else a bug. */
export function refusalOf(error: unknown): unknown {
  if (!(error instanceof RemoteError)) return error;
  const is = (code: status, reason: string): boolean => error.status === code && error.reason === reason;
  if (is(status.NOT_FOUND, 'template_not_found')) return new ApiError(404, 'template_not_found', text('template_not_found'), { cause: error });
  if (is(status.FAILED_PRECONDITION, 'template_inactive')) return FieldErrors.of('template', text('template.inactive'));
  if (is(status.INVALID_ARGUMENT, 'data_invalid')) {
    // dispatch-svc names what the template's declared variables refused; without that, a general message.
    return error.fields.length > 0 ? FieldErrors.of('data', ...error.fields) : FieldErrors.of('data', text('data.invalid'));
  }
  if (is(status.FAILED_PRECONDITION, 'idempotency_key_mismatch')) return FieldErrors.of('Idempotency-Key', text('idempotency_key.mismatch'));
  if (is(status.ABORTED, 'idempotency_key_in_use')) {
    return new ApiError(409, 'idempotency_key_in_use', text('idempotency_key_in_use'), { headers: { 'Retry-After': '1' }, cause: error });
  }
  return unexpectedRemoteFailure(error);
}
