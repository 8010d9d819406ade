import assert from 'node:assert/strict';
import { test } from 'node:test';
import { encodeViolation, VariablesSchemas } from './variables-schema.ts';

const schema = {
  type: 'object',
  required: ['name', 'count'],
  properties: {
    name: { type: 'string', minLength: 1 },
    count: { type: 'integer' },
    email: { type: 'string', format: 'email' },
    order: { type: 'object', required: ['id'], properties: { id: { type: 'string' } }, additionalProperties: false },
  },
};
const template = { id: 1, version: 1, variablesSchema: schema };

test('data that satisfies the schema has no messages', () => {
  assert.deepEqual(new VariablesSchemas().check(template, { name: 'Ada', count: 3 }), []);
});

test('a template without a schema accepts any data', () => {
  assert.deepEqual(new VariablesSchemas().check({ id: 2, version: 1, variablesSchema: null }, { anything: true }), []);
});

test('every fault is reported at once, naming the variable', () => {
  const messages = new VariablesSchemas().check(template, { count: 'three', email: 'not-an-email', order: { extra: 1 } });
  assert.deepEqual(messages.sort(), [
    'count: must be integer',
    'email: must match format "email"',
    'name: is required',
    'order.extra: is not allowed',
    'order.id: is required',
  ]);
});

test('a schema is compiled once per template version and recompiled for a new version', () => {
  const schemas = new VariablesSchemas();
  assert.deepEqual(schemas.check(template, { name: 'Ada', count: 1 }), []);
  // Same id and version: the cached validator answers even when the row's schema object differs.
  assert.deepEqual(schemas.check({ ...template, variablesSchema: { type: 'object', required: ['other'] } }, { name: 'Ada', count: 1 }), []);
  assert.deepEqual(schemas.check({ ...template, version: 2, variablesSchema: { type: 'object', required: ['other'] } }, { name: 'Ada', count: 1 }), [
    'other: is required',
  ]);
});

test('the cache is bounded and evicts the least recently used validator', () => {
  const schemas = new VariablesSchemas({ maxCached: 2 });
  const strict = (id: number) => ({ id, version: 1, variablesSchema: { type: 'object', required: ['a'] } });
  const lax = (id: number) => ({ id, version: 1, variablesSchema: {} });
  assert.equal(schemas.check(strict(1), {}).length, 1);
  assert.equal(schemas.check(strict(2), {}).length, 1);
  assert.equal(schemas.check(strict(1), {}).length, 1); // 1 is now the most recent
  assert.equal(schemas.check(strict(3), {}).length, 1); // evicts 2
  assert.equal(schemas.check(lax(1), {}).length, 1, 'template 1 is still cached');
  assert.equal(schemas.check(lax(2), {}).length, 0, 'template 2 was evicted and recompiled');
});

test('two templates may declare the same $id', () => {
  const schemas = new VariablesSchemas();
  const withId = (id: number, required: string) => ({
    id,
    version: 1,
    variablesSchema: { $id: 'https://example.com/vars', type: 'object', required: [required] },
  });
  assert.deepEqual(schemas.check(withId(1, 'a'), {}), ['a: is required']);
  assert.deepEqual(schemas.check(withId(2, 'b'), {}), ['b: is required']);
});

test('unusable schemas are explained', () => {
  const schemas = new VariablesSchemas();
  assert.equal(schemas.problem(schema), undefined);
  assert.match(schemas.problem({ type: 'object', properties: { a: { type: 'strng' } } }) ?? '', /schema is invalid/);
  assert.match(schemas.problem({ type: 'object', requird: ['a'] }) ?? '', /unknown keyword: "requird"/);
  assert.match(schemas.problem({ type: 'string', format: 'no-such-format' }) ?? '', /unknown format/);
  assert.equal(schemas.problem([]), 'must be a JSON Schema object');
  assert.equal(schemas.problem('string'), 'must be a JSON Schema object');
});

test('schemas with internal references keep validating after compilation', () => {
  const tree = {
    type: 'object',
    definitions: { node: { type: 'object', properties: { child: { $ref: '#/definitions/node' }, n: { type: 'integer' } } } },
    properties: { tree: { $ref: '#/definitions/node' } },
  };
  const schemas = new VariablesSchemas();
  const template = { id: 9, version: 1, variablesSchema: tree };
  assert.deepEqual(schemas.check(template, { tree: { child: { child: { n: 'x' } } } }), ['tree.child.child.n: must be integer']);
  assert.deepEqual(schemas.check(template, { tree: { child: { n: 2 } } }), []);
});

test('violations name the variable, the keyword and the parameters its text needs', () => {
  const rich = {
    id: 20,
    version: 1,
    variablesSchema: {
      type: 'object',
      required: ['name'],
      additionalProperties: false,
      properties: {
        name: { type: 'string', minLength: 2, maxLength: 3, pattern: '^[A-Z]' },
        amount: { type: 'integer', minimum: 1, maximum: 9 },
        rate: { exclusiveMinimum: 0, exclusiveMaximum: 1 },
        note: { type: ['string', 'null'] },
        plan: { enum: ['free', 'pro'] },
        kind: { const: 'invoice' },
        email: { format: 'email' },
        tags: { type: 'array', minItems: 1, maxItems: 2 },
        step: { multipleOf: 5 },
        order: { type: 'object', required: ['id'] },
      },
    },
  };
  const schemas = new VariablesSchemas();
  const byPath = (data: unknown) =>
    schemas
      .violations(rich, data)
      .map((v) => `${v.path}|${v.keyword}|${JSON.stringify(v.params)}`)
      .sort();
  assert.deepEqual(byPath({ amount: 'x', extra: 1, note: 3, plan: 'gold', kind: 'bill', email: 'nope', tags: [], step: 7, order: {} }), [
    'amount|type|{"type":"integer"}',
    'email|format|{"format":"email"}',
    'extra|additionalProperties|{}',
    'kind|const|{}',
    'name|required|{}',
    'note|type|{"type":["string","null"]}',
    'order.id|required|{}',
    'plan|enum|{}',
    'step|multipleOf|{}',
    'tags|minItems|{"limit":1}',
  ]);
  assert.deepEqual(byPath({ name: 'abcd', amount: 0, rate: 1, tags: [1, 2, 3] }), [
    'amount|minimum|{"limit":1}',
    'name|maxLength|{"limit":3}',
    'name|pattern|{"pattern":"^[A-Z]"}',
    'rate|exclusiveMaximum|{"limit":1}',
    'tags|maxItems|{"limit":2}',
  ]);
  assert.deepEqual(byPath({ name: 'a', amount: 10, rate: 0 }), [
    'amount|maximum|{"limit":9}',
    'name|minLength|{"limit":2}',
    'name|pattern|{"pattern":"^[A-Z]"}',
    'rate|exclusiveMinimum|{"limit":0}',
  ]);
  assert.deepEqual(schemas.violations(rich, { name: 'Ada' }), []);
});

test('a violation of data itself has an empty path, and repeated faults are reported once', () => {
  const schemas = new VariablesSchemas();
  const whole = {
    id: 21,
    version: 1,
    variablesSchema: { type: 'object', minProperties: 1, properties: { n: { anyOf: [{ type: 'string' }, { type: 'string', minLength: 1 }] } } },
  };
  assert.deepEqual(schemas.violations(whole, {}), [{ path: '', keyword: 'minProperties', params: {} }]);
  assert.deepEqual(
    schemas.violations(whole, { n: 1 }).map((v) => `${v.path}|${v.keyword}`),
    ['n|type', 'n|anyOf'],
  );
});

test('a violation travels as a JSON object in one trailer string', () => {
  const [first] = new VariablesSchemas().violations(template, { name: 'Ada', count: 'x' });
  assert.ok(first);
  assert.equal(encodeViolation(first), '{"path":"count","keyword":"type","params":{"type":"integer"}}');
});
