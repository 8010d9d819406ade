// Assertions shared by dispatch-svc's integration tests.
import assert from 'node:assert/strict';
import type { status } from '@grpc/grpc-js';
import { RemoteError } from '@notify/platform';

/** Asserts that a gRPC call was refused with this status and `notify-error-code` reason; returns the error. */
export async function assertRefused(call: Promise<unknown>, code: status, reason: string): Promise<RemoteError> {
  let caught: unknown;
  try {
    await call;
  } catch (error) {
    caught = error;
  }
  assert.ok(caught instanceof RemoteError, `expected a RemoteError, got ${String(caught)}`);
  assert.equal(caught.status, code, `status of ${caught.message}`);
  assert.equal(caught.reason, reason);
  return caught;
}
