import assert from 'node:assert/strict';
import { test } from 'node:test';
import { sampleData } from './sample-data.ts';

test('every declared variable gets a value of its type, named after it when nothing better is declared', () => {
  const schema = {
    type: 'object',
    properties: {
      first_name: { type: 'string' },
      orderCount: { type: 'integer', minimum: 3 },
      total: { type: 'number' },
      vip: { type: 'boolean' },
      email: { type: 'string', format: 'email' },
      items: { type: 'array', items: { type: 'object', properties: { sku: { type: 'string' } } } },
    },
  };
  assert.deepEqual(sampleData(schema), {
    first_name: 'First name',
    orderCount: 3,
    total: 1.5,
    vip: true,
    email: 'someone@example.com',
    items: [{ sku: 'Sku' }],
  });
});

test("a schema's own example, default, const or enum wins over a made-up value", () => {
  const schema = {
    properties: {
      a: { type: 'string', examples: ['from examples'] },
      b: { type: 'string', default: 'from default' },
      c: { const: 42 },
      d: { enum: ['first', 'second'] },
      e: { anyOf: [{ type: 'integer' }, { type: 'string' }] },
      f: { type: 'string', minLength: 8, maxLength: 10 },
    },
  };
  assert.deepEqual(sampleData(schema), { a: 'from examples', b: 'from default', c: 42, d: 'first', e: 1, f: 'Fxxxxxxx' });
});

test('a template without variables previews with an empty object, and a schema that is not an object with one too', () => {
  assert.deepEqual(sampleData(null), {});
  assert.deepEqual(sampleData({ type: 'string' }), {});
});
