import assert from 'node:assert/strict';
import { test } from 'node:test';
import { ApiError } from '../errors/api-error.ts';
import { parseIdempotencyKey } from './idempotency-key.ts';

test('no header means no idempotency key', () => {
  assert.equal(parseIdempotencyKey(undefined), undefined);
});

test('a UUID of any version is accepted in any case and lower-cased', () => {
  assert.equal(parseIdempotencyKey('0F8FAD5B-D9CB-469F-A165-70867728950E'), '0f8fad5b-d9cb-469f-a165-70867728950e');
  assert.equal(parseIdempotencyKey('123e4567-e89b-12d3-a456-426614174000'), '123e4567-e89b-12d3-a456-426614174000');
  assert.equal(parseIdempotencyKey('017f22e2-79b0-7cc3-98c4-dc0c0c07398f'), '017f22e2-79b0-7cc3-98c4-dc0c0c07398f');
});

test('anything else is an invalid header', () => {
  for (const header of [
    '',
    'abc',
    '0f8fad5b-d9cb-469f-a165-70867728950',
    '{0f8fad5b-d9cb-469f-a165-70867728950e}',
    '0f8fad5bd9cb469fa16570867728950e',
    '0f8fad5b-d9cb-469f-a165-70867728950e, 0f8fad5b-d9cb-469f-a165-70867728950e',
  ]) {
    assert.throws(
      () => parseIdempotencyKey(header),
      (error: unknown) => error instanceof ApiError && error.status === 400 && error.code === 'invalid_header',
      header,
    );
  }
});
