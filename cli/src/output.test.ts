import assert from 'node:assert/strict';
import { test } from 'node:test';
import { type Column, cell, renderTable } from './output.ts';

test('a table aligns every column to its widest cell and does not pad the last one', () => {
  const columns: Column<{ id: number; name: string; on: boolean }>[] = [
    { header: 'ID', value: (row) => row.id },
    { header: 'NAME', value: (row) => row.name },
    { header: 'ON', value: (row) => row.on },
  ];
  assert.equal(
    renderTable(columns, [
      { id: 7, name: 'a much longer name', on: true },
      { id: 1200, name: '', on: false },
    ]),
    'ID    NAME                ON\n7     a much longer name  yes\n1200  -                   no\n',
  );
});

test('cells never carry terminal control characters and long text is cut', () => {
  assert.equal(cell('Hi\u001b[2J\r\nthere\u0007'), 'Hi [2J there');
  assert.equal(cell('x'.repeat(100), 10), `${'x'.repeat(9)}…`);
});
