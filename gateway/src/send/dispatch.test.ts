import assert from 'node:assert/strict';
import { test } from 'node:test';
import { Metadata, type ServiceError, status } from '@grpc/grpc-js';
import { errorMetadataKeys, RemoteError } from '@notify/platform';
import { ApiError, FieldErrors } from '../errors/api-error.ts';
import { text } from '../i18n/messages.ts';
import { refusalOf } from './dispatch.ts';

/** A failure as dispatch-svc sends it over the wire: status, `notify-error-code` and `notify-field-errors` trailers. */
function remote(code: status, reason?: string, fields?: string[]): RemoteError {
  const metadata = new Metadata();
  if (reason) metadata.set(errorMetadataKeys.reason, reason);
  if (fields) metadata.set(errorMetadataKeys.fields, JSON.stringify(fields));
  return new RemoteError(Object.assign(new Error('refused'), { code, details: 'refused', metadata }) as ServiceError);
}

test('an unknown template is 404 template_not_found', () => {
  const refusal = refusalOf(remote(status.NOT_FOUND, 'template_not_found'));
  assert.ok(refusal instanceof ApiError);
  assert.equal(refusal.status, 404);
  assert.equal(refusal.code, 'template_not_found');
});

test('an inactive template is a 422 on the template field', () => {
  const refusal = refusalOf(remote(status.FAILED_PRECONDITION, 'template_inactive'));
  assert.ok(refusal instanceof FieldErrors);
  assert.deepEqual([...refusal.fields], [['template', [{ key: 'template.inactive' }]]]);
});

test("data refused by the template variables is a 422 on data, each violation a text of the caller's language", () => {
  const violations = [
    { path: 'name', keyword: 'required', params: {} },
    { path: 'age', keyword: 'type', params: { type: 'integer' } },
  ];
  const refusal = refusalOf(
    remote(
      status.INVALID_ARGUMENT,
      'data_invalid',
      violations.map((violation) => JSON.stringify(violation)),
    ),
  );
  assert.ok(refusal instanceof FieldErrors);
  assert.deepEqual([...refusal.fields], [['data', [text('variables.required', { variable: 'name' }), text('variables.type.integer', { variable: 'age' })]]]);
  // Plain messages (a dispatch-svc from before violations) are still shown rather than lost.
  const plain = refusalOf(remote(status.INVALID_ARGUMENT, 'data_invalid', ['name: is required']));
  assert.ok(plain instanceof FieldErrors);
  assert.deepEqual([...plain.fields], [['data', ['name: is required']]]);
  const general = refusalOf(remote(status.INVALID_ARGUMENT, 'data_invalid'));
  assert.ok(general instanceof FieldErrors);
  assert.deepEqual([...general.fields], [['data', [{ key: 'data.invalid' }]]]);
});

test('a reused Idempotency-Key with another body is a 422 on Idempotency-Key', () => {
  const refusal = refusalOf(remote(status.FAILED_PRECONDITION, 'idempotency_key_mismatch'));
  assert.ok(refusal instanceof FieldErrors);
  assert.deepEqual([...refusal.fields], [['Idempotency-Key', [{ key: 'idempotency_key.mismatch' }]]]);
});

test('a key whose first request is in flight is 409 with Retry-After 1', () => {
  const refusal = refusalOf(remote(status.ABORTED, 'idempotency_key_in_use'));
  assert.ok(refusal instanceof ApiError);
  assert.equal(refusal.status, 409);
  assert.equal(refusal.code, 'idempotency_key_in_use');
  assert.deepEqual(refusal.headers, { 'Retry-After': '1' });
});

test('a quota used up meanwhile, as Send reports it, is 403 plan_blocked', () => {
  const refusal = refusalOf(remote(status.FAILED_PRECONDITION, 'plan_blocked'));
  assert.ok(refusal instanceof ApiError);
  assert.equal(refusal.status, 403);
  assert.equal(refusal.code, 'plan_blocked');
});

test('dispatch-svc refusing the gateway token is 503, not a bug', () => {
  const refusal = refusalOf(remote(status.UNAUTHENTICATED));
  assert.ok(refusal instanceof ApiError);
  assert.equal(refusal.status, 503);
  assert.equal(refusal.code, 'service_unavailable');
});

test('an unavailable or too slow dispatch-svc is 503 with Retry-After', () => {
  for (const code of [status.UNAVAILABLE, status.DEADLINE_EXCEEDED]) {
    const refusal = refusalOf(remote(code));
    assert.ok(refusal instanceof ApiError);
    assert.equal(refusal.status, 503);
    assert.equal(refusal.code, 'service_unavailable');
    assert.deepEqual(refusal.headers, { 'Retry-After': '5' });
  }
});

test('an undocumented status or reason is left as the bug it is', () => {
  for (const error of [
    remote(status.INTERNAL),
    remote(status.NOT_FOUND, 'message_not_found'),
    remote(status.ABORTED, 'template_inactive'),
    new TypeError('x'),
  ]) {
    assert.equal(refusalOf(error), error);
  }
});

test("fields_invalid (no idempotency record decided first) answers with the gateway's own field errors", () => {
  const own = FieldErrors.of('to', text('to.email'));
  assert.equal(refusalOf(remote(status.INVALID_ARGUMENT, 'fields_invalid'), own), own);
  // Never asked for without them: then it is a bug, not a refusal to render.
  const error = remote(status.INVALID_ARGUMENT, 'fields_invalid');
  assert.equal(refusalOf(error), error);
});

test('a suppressed recipient is a 422 on `to` naming the reason and date, in the words of the caller', () => {
  const refusal = refusalOf(remote(status.FAILED_PRECONDITION, 'recipient_suppressed', ['hard_bounce', '2026-11-25']));
  assert.ok(refusal instanceof FieldErrors);
  assert.deepEqual([...refusal.fields], [['to', [text('to.suppressed', { reason: 'hard_bounce', since: '2026-11-25' })]]]);
});

test('a message too large to be queued is 413 payload_too_large naming the limit dispatch-svc gave', () => {
  const refusal = refusalOf(remote(status.RESOURCE_EXHAUSTED, 'payload_too_large', ['1044480']));
  assert.ok(refusal instanceof ApiError);
  assert.equal(refusal.status, 413);
  assert.equal(refusal.code, 'payload_too_large');
  assert.deepEqual(refusal.detail, text('message_too_large', { limit: '1044480' }));
});

test('a call over the gRPC message limit (RESOURCE_EXHAUSTED without a reason of ours) is 413 payload_too_large, not a 500', () => {
  const refusal = refusalOf(remote(status.RESOURCE_EXHAUSTED));
  assert.ok(refusal instanceof ApiError);
  assert.equal(refusal.status, 413);
  assert.equal(refusal.code, 'payload_too_large');
  assert.deepEqual(refusal.detail, text('request_too_large'));
});
