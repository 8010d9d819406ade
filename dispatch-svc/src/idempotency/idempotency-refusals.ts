// How Send refuses a request over its Idempotency-Key (the contract's check 10).
import { status } from '@grpc/grpc-js';
import { UserError } from '@notify/platform';

/** Another request with the key is being processed right now; the gateway answers 409 with Retry-After. */
export function idempotencyKeyInUse(): UserError {
  return new UserError(status.ABORTED, 'idempotency_key_in_use', 'a request with this Idempotency-Key is still being processed');
}

/** The key's first request had another fingerprint; the gateway answers 422 on Idempotency-Key. */
export function idempotencyKeyMismatch(): UserError {
  return new UserError(status.FAILED_PRECONDITION, 'idempotency_key_mismatch', 'this Idempotency-Key was used with a different request');
}
