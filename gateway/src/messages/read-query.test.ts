import assert from 'node:assert/strict';
import { test } from 'node:test';
import { FieldErrors } from '../errors/api-error.ts';
import { parseListQuery } from './read-query.ts';

function faultsOf(query: Record<string, string | string[]>): string[] {
  try {
    parseListQuery(query);
  } catch (error) {
    assert.ok(error instanceof FieldErrors);
    return [...error.fields.keys()].sort();
  }
  return [];
}

test('no parameter lists the newest 50 of every state', () => {
  assert.deepEqual(parseListQuery({}), { state: '', to: '', template: '', createdAfter: '', createdBefore: '', limit: 50, cursor: '', tag: '' });
});

test('valid filters pass through as given', () => {
  const query = {
    status: 'deferred',
    to: 'Ada@Example.com',
    template: 'welcome_2',
    created_after: '2026-01-31T09:30:00Z',
    created_before: '2026-02-01T00:00:00.123456+01:00',
    limit: '100',
    cursor: 'abc',
    tag: 'Spring-sale_2',
  };
  assert.deepEqual(parseListQuery(query), {
    state: 'deferred',
    to: 'Ada@Example.com',
    template: 'welcome_2',
    createdAfter: query.created_after,
    createdBefore: query.created_before,
    limit: 100,
    cursor: 'abc',
    tag: 'Spring-sale_2',
  });
});

test('every parameter at fault is named at once', () => {
  assert.deepEqual(faultsOf({ status: 'delivered', created_after: '2026-01-31', created_before: 'yesterday', limit: '0', template: 'a b', page: '2' }), [
    'created_after',
    'created_before',
    'limit',
    'page',
    'status',
    'template',
  ]);
});

test('a limit must be a whole number from 1 to 100, and a parameter may be given once', () => {
  for (const limit of ['0', '101', '1.5', '-1', '1e2', ' 5', '']) assert.deepEqual(faultsOf({ limit }), limit === '' ? [] : ['limit'], limit);
  assert.deepEqual(faultsOf({ limit: ['1', '2'] }), ['limit']);
  assert.deepEqual(faultsOf({ to: 'x'.repeat(255) }), ['to']);
});

test('a tag filter is one tag as a send gives it: 1 to 64 of A-Z, a-z, 0-9, _ and -', () => {
  for (const tag of ['a b', 'x'.repeat(65), 'été', 'a,b', "a'--"]) assert.deepEqual(faultsOf({ tag }), ['tag'], tag);
  assert.deepEqual(faultsOf({ tag: 'x'.repeat(64) }), []);
  assert.deepEqual(faultsOf({ tag: ['a', 'b'] }), ['tag']);
});
