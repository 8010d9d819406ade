// batchRows: a batch's rows as unnested array parameters, a single item's as a one-row VALUES under a name of its own
// (what each form does to PostgreSQL's plans is tested with the statements that use it, in webhook-svc).
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { batchRows, type RowColumn } from './index.ts';

interface Key {
  readonly id: number;
  readonly label: string | null;
}
const columns: readonly RowColumn<Key>[] = [
  { type: 'bigint', value: (key) => key.id },
  { type: 'text', value: (key) => key.label },
];

test('a batch is one array parameter per column, unnested, under the statement name', () => {
  assert.deepEqual(batchRows('find', [{ id: 1, label: 'a' }, { id: 2, label: null }], columns), {
    name: 'find',
    rows: 'unnest($1::bigint[], $2::text[])',
    values: [[1, 2], ['a', null]],
  });
});

test('a single item is a one-row VALUES of scalar parameters, under a name of its own', () => {
  assert.deepEqual(batchRows('find', [{ id: 7, label: null }], columns), {
    name: 'find-one',
    rows: '(VALUES ($1::bigint, $2::text))',
    values: [7, null],
  });
});
