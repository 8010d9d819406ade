// What the caller sees when auth-svc or dispatch-svc cannot answer: a retryable 503, never the address or the stack.
import { status } from '@grpc/grpc-js';
import { RemoteError } from '@notify/platform';
import { text } from '../i18n/messages.ts';
import { ApiError } from './api-error.ts';

/** Seconds a client is asked to wait before retrying when a dependency is down. */
export const unavailableRetryAfterSeconds = 5;

/** True when a gRPC call failed because the service is down, overloaded or too slow, not because of the request. */
export function isDependencyDown(error: unknown): error is RemoteError {
  return error instanceof RemoteError && (error.status === status.UNAVAILABLE || error.status === status.DEADLINE_EXCEEDED);
}

/**
 * True when a service refused the gateway itself: UNAUTHENTICATED or PERMISSION_DENIED that no mapping claimed as the
 * caller's fault (auth-svc says `invalid_api_key` for a bad API key) is the platform's answer to a wrong GATEWAY_TOKEN,
 * or to a method the gateway's token may not call. The gateway is misconfigured and the caller did nothing wrong, so
 * this is never a 401 or 403.
 */
export function isGatewayTokenRefused(error: unknown): error is RemoteError {
  return error instanceof RemoteError && (error.status === status.UNAUTHENTICATED || error.status === status.PERMISSION_DENIED);
}

/** 503 `service_unavailable`; `cause` is kept for the log line only. */
export function serviceUnavailable(cause: unknown): ApiError {
  return new ApiError(503, 'service_unavailable', text('service_unavailable'), {
    headers: { 'Retry-After': String(unavailableRetryAfterSeconds) },
    cause,
  });
}

/**
 * A failed call that no specific mapping claimed: 503 when the service is down or refuses the gateway's token,
 * otherwise the error itself (a bug: 500).
 */
export function unexpectedRemoteFailure(error: unknown): unknown {
  return isDependencyDown(error) || isGatewayTokenRefused(error) ? serviceUnavailable(error) : error;
}
