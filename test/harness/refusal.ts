// A gRPC call a test expects a service to refuse: the RemoteError the client rejects with, checked.
import assert from 'node:assert/strict';
import type { status } from '@grpc/grpc-js';
import { RemoteError } from '@notify/platform';

/** The RemoteError `call` rejects with; fails the test if it succeeds or fails any other way. */
export async function refusal(call: Promise<unknown>): Promise<RemoteError> {
  try {
    await call;
  } catch (error) {
    assert.ok(error instanceof RemoteError, `expected a RemoteError, got ${String(error)}`);
    return error;
  }
  assert.fail('the call succeeded');
}

/** Asserts that a call was refused with this status and `notify-error-code` reason; returns the error. */
export async function assertRefused(call: Promise<unknown>, code: status, reason: string): Promise<RemoteError> {
  const refused = await refusal(call);
  assert.equal(refused.status, code, `status of ${refused.message}`);
  assert.equal(refused.reason, reason);
  return refused;
}
