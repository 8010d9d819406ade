// batchRows: a batch's rows as unnested array parameters (padded with a filler where one is given), a single item's as
// a one-row VALUES under a name of its own (what each form does to PostgreSQL's plans is tested with the statements
// that use them, in webhook-svc and dispatch-svc).
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { batchRows, paddedBatchLength, type RowColumn } from './index.ts';

interface Key {
  readonly id: number;
  readonly label: string | null;
}
const columns: readonly RowColumn<Key>[] = [
  { type: 'bigint', value: (key) => key.id },
  { type: 'text', value: (key) => key.label },
];

test('a batch is one array parameter per column, unnested, under the statement name', () => {
  assert.deepEqual(
    batchRows(
      'find',
      [
        { id: 1, label: 'a' },
        { id: 2, label: null },
      ],
      columns,
    ),
    {
      name: 'find',
      rows: 'unnest($1::bigint[], $2::text[])',
      values: [
        [1, 2],
        ['a', null],
      ],
    },
  );
});

test('a single item is a one-row VALUES of scalar parameters, under a name of its own', () => {
  assert.deepEqual(batchRows('find', [{ id: 7, label: null }], columns), {
    name: 'find-one',
    rows: '(VALUES ($1::bigint, $2::text))',
    values: [7, null],
  });
});

test('a batch given a filler is padded with it to paddedBatchLength rows; a longer one is left as it is', () => {
  const filler = { id: 0, label: null };
  const padded = batchRows(
    'find',
    [
      { id: 1, label: 'a' },
      { id: 2, label: 'b' },
    ],
    columns,
    { filler },
  );
  assert.equal(Array.isArray(padded.values[0]) && padded.values[0].length, paddedBatchLength);
  assert.deepEqual(padded.values[0], [1, 2, ...Array<number>(paddedBatchLength - 2).fill(0)]);
  const long = Array.from({ length: paddedBatchLength + 1 }, (_, index) => ({ id: index + 1, label: null }));
  assert.deepEqual(
    batchRows('find', long, columns, { filler }).values[0],
    long.map((key) => key.id),
  );
});

test('with ordinality, each row has its position after the columns: the unnest counts them, the one-row form is 1', () => {
  assert.equal(
    batchRows(
      'find',
      [
        { id: 1, label: 'a' },
        { id: 2, label: 'b' },
      ],
      columns,
      { ordinality: true },
    ).rows,
    'unnest($1::bigint[], $2::text[]) WITH ORDINALITY',
  );
  assert.equal(batchRows('find', [{ id: 1, label: 'a' }], columns, { ordinality: true }).rows, '(VALUES ($1::bigint, $2::text, 1::bigint))');
});

test('rows that follow other parameters number theirs from firstParameter, in both forms', () => {
  assert.equal(
    batchRows(
      'find',
      [
        { id: 1, label: 'a' },
        { id: 2, label: 'b' },
      ],
      columns,
      { firstParameter: 13 },
    ).rows,
    'unnest($13::bigint[], $14::text[])',
  );
  assert.equal(batchRows('find', [{ id: 1, label: 'a' }], columns, { firstParameter: 13 }).rows, '(VALUES ($13::bigint, $14::text))');
});
