import assert from 'node:assert/strict';
import { test } from 'node:test';
import { requestIdFrom } from './request-context.ts';

const uuid = /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;

test('a sane caller request id is kept as it is', () => {
  for (const id of ['abc', 'A-1_b.2', 'x'.repeat(128), '0f8fad5b-d9cb-469f-a165-70867728950e']) assert.equal(requestIdFrom(id), id);
});

test('a missing, empty, too long or unsafe request id is replaced by a new UUID', () => {
  for (const id of [undefined, '', 'x'.repeat(129), 'has space', 'line\nbreak', 'quote"', '<script>', 'ü']) {
    const chosen = requestIdFrom(id);
    assert.match(chosen, uuid, String(id));
  }
  assert.notEqual(requestIdFrom(undefined), requestIdFrom(undefined));
});
