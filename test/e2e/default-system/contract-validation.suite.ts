// docs/contract.md "Fields (422 rules)" and checks 11-13 against the running services: every rule of every field, all errors
// at once, unknown fields, 404 for an unknown template versus 422 for an inactive one, a template's declared variables,
// and nothing written for any refusal.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { assertAccepted, assertCoded, assertFieldErrors, writtenRows } from '../../harness/contract-shapes.ts';
import { type HttpResult, type System, startSystem, type Tenant } from '../../harness/system.ts';
import { anotherKey, validBody } from '../../harness/tenants.ts';

const required = 'This field is required.';
const unknown = 'Unknown field.';
let system: System;
let tenant: Tenant;

before(async () => {
  system = await startSystem();
  tenant = await system.createTenant('validation');
  await system.putTemplate(tenant.projectId, 'welcome');
  await system.putTemplate(tenant.projectId, 'retired', { active: false });
  await system.putTemplate(tenant.projectId, 's'.repeat(100));
  await system.putTemplate(tenant.projectId, 'Every-kind_Of-slug_09');
  await system.putTemplate(tenant.projectId, 'invoice', {
    schema: {
      type: 'object',
      required: ['name', 'amount'],
      properties: { name: { type: 'string' }, amount: { type: 'integer', minimum: 1 } },
      additionalProperties: false,
    },
  });
});

after(async () => {
  await system?.stop();
});

/** `data` nested `levels` deep, `data` itself being level 1. */
function nested(levels: number): Record<string, unknown> {
  let value: Record<string, unknown> = {};
  for (let level = 1; level < levels; level++) value = { level: value };
  return value;
}

/** A list of `length` numbers. */
const list = (length: number): number[] => Array.from({ length }, (_, index) => index);

/** Exactly `count` values (count a multiple of 1000): lists of 999 objects, each list a member of the result. */
function values(count: number): Record<string, unknown> {
  return Object.fromEntries(Array.from({ length: count / 1_000 }, (_, index) => [`list${index}`, Array.from({ length: 999 }, () => ({}))]));
}

/** An address of exactly `length` characters that is otherwise well formed (64-character local part, labels of 63). */
function addressOfLength(length: number): string {
  const local = 'l'.repeat(64);
  const last = length - local.length - 1 - 64 - 64 - 4;
  return `${local}@${'a'.repeat(63)}.${'b'.repeat(63)}.${'c'.repeat(last)}.com`;
}

/** A body's JSON text with `member` (raw JSON text, e.g. `"__proto__":1`) added to the object at `path`. */
function withRawMember(body: Record<string, unknown>, member: string, inData = false): string {
  const text = JSON.stringify(inData ? { ...body, data: { marker: true } } : body);
  return inData ? text.replace('{"marker":true}', `{"marker":true,${member}}`) : text.replace(/}$/, `,${member}}`);
}

/**
 * Sends every case and checks that each is refused with 422 naming exactly the expected fields, with the exact
 * messages where given (a RegExp: one message matching it); nothing is written for any of them.
 */
async function assertRefusals(cases: Record<string, [body: unknown, expected: Record<string, string | RegExp | null>]>): Promise<void> {
  const key = await anotherKey(system, tenant, 'refusals');
  const before = await writtenRows(system.db);
  for (const [label, [body, expected]] of Object.entries(cases)) {
    const response: HttpResult = await system.send(key, body);
    assert.equal(response.status, 422, `${label}: ${response.status} ${response.text}`);
    assertFieldErrors(response, Object.keys(expected));
    for (const [field, message] of Object.entries(expected)) {
      const messages = response.body[field] as string[];
      if (typeof message === 'string') assert.deepEqual(messages, [message], `${label}: ${field}`);
      else if (message instanceof RegExp)
        assert.ok(
          messages.some((text) => message.test(text)),
          `${label}: ${field} ${JSON.stringify(messages)} should match ${message}`,
        );
    }
  }
  assert.deepEqual(await writtenRows(system.db), before, 'a refused request writes nothing');
}

const base = validBody('welcome');
const without = (field: string): Record<string, unknown> => Object.fromEntries(Object.entries(base).filter(([name]) => name !== field));
const expectsString = /string/i;
const expectsObject = /object/i;

test('template: required, a string of 1-100 characters from [A-Za-z0-9_-]', async () => {
  await assertRefusals({
    missing: [without('template'), { template: required }],
    'a number': [{ ...base, template: 42 }, { template: expectsString }],
    null: [{ ...base, template: null }, { template: expectsString }],
    'a list': [{ ...base, template: ['welcome'] }, { template: expectsString }],
    empty: [{ ...base, template: '' }, { template: null }],
    '101 characters': [{ ...base, template: 's'.repeat(101) }, { template: /100/ }],
    'a space': [{ ...base, template: 'wel come' }, { template: null }],
    'a dot': [{ ...base, template: 'wel.come' }, { template: null }],
    'a slash': [{ ...base, template: 'wel/come' }, { template: null }],
    'a non-ASCII letter': [{ ...base, template: 'wélcome' }, { template: null }],
    'a trailing newline': [{ ...base, template: 'welcome\n' }, { template: null }],
  });
});

test('to: required, one addr-spec of at most 254 characters, no display name, no list, no control characters', async () => {
  await assertRefusals({
    missing: [without('to'), { to: required }],
    'a number': [{ ...base, to: 42 }, { to: expectsString }],
    null: [{ ...base, to: null }, { to: expectsString }],
    'a list of addresses': [{ ...base, to: ['a@example.com'] }, { to: expectsString }],
    'a display name': [{ ...base, to: 'Ada Lovelace <ada@example.com>' }, { to: null }],
    'two addresses with a comma': [{ ...base, to: 'a@example.com, b@example.com' }, { to: null }],
    'two addresses with a semicolon': [{ ...base, to: 'a@example.com;b@example.com' }, { to: null }],
    '255 characters': [{ ...base, to: addressOfLength(255) }, { to: /254/ }],
    'CR LF and a header': [{ ...base, to: 'a@example.com\r\nBcc: victim@example.com' }, { to: null }],
    'a line feed': [{ ...base, to: 'a@exa\nmple.com' }, { to: null }],
    'a NUL': [{ ...base, to: 'a\u0000@example.com' }, { to: null }],
    'a tab': [{ ...base, to: 'a@example.com\t' }, { to: null }],
    'not an address': [{ ...base, to: 'not-an-email' }, { to: null }],
    'no local part': [{ ...base, to: '@example.com' }, { to: null }],
    'no domain': [{ ...base, to: 'a@' }, { to: null }],
    'two @': [{ ...base, to: 'a@@example.com' }, { to: null }],
    'an empty label': [{ ...base, to: 'a@example..com' }, { to: null }],
    empty: [{ ...base, to: '' }, { to: null }],
  });
});

test('channel: required, and "email" is the only valid value', async () => {
  await assertRefusals({
    missing: [without('channel'), { channel: required }],
    sms: [{ ...base, channel: 'sms' }, { channel: null }],
    'upper case': [{ ...base, channel: 'EMAIL' }, { channel: null }],
    'a leading space': [{ ...base, channel: ' email' }, { channel: null }],
    'a number': [{ ...base, channel: 1 }, { channel: expectsString }],
    null: [{ ...base, channel: null }, { channel: expectsString }],
    'a list': [{ ...base, channel: ['email'] }, { channel: expectsString }],
  });
});

test('data: required, a JSON object at most 32 levels deep, without __proto__, constructor or prototype keys anywhere; lists of at most 1000 items, 10000 values in all', async () => {
  const deepArray = { list: JSON.parse(`${'['.repeat(32)}${']'.repeat(32)}`) as unknown };
  await assertRefusals({
    missing: [without('data'), { data: required }],
    'an array': [{ ...base, data: [] }, { data: expectsObject }],
    null: [{ ...base, data: null }, { data: expectsObject }],
    'a string': [{ ...base, data: 'name=Ada' }, { data: expectsObject }],
    'a number': [{ ...base, data: 1 }, { data: expectsObject }],
    '33 levels of objects': [{ ...base, data: nested(33) }, { data: /32/ }],
    '33 levels through arrays': [{ ...base, data: deepArray }, { data: /32/ }],
    '__proto__ at the top of data': [withRawMember(base, '"__proto__":{"polluted":true}', true), { data: null }],
    'constructor at the top of data': [withRawMember(base, '"constructor":{"prototype":{}}', true), { data: null }],
    'prototype at the top of data': [withRawMember(base, '"prototype":1', true), { data: null }],
    '__proto__ nested': [{ ...base, data: JSON.parse('{"a":{"b":{"__proto__":{"x":1}}}}') as unknown }, { data: null }],
    'constructor inside an array': [{ ...base, data: { items: [{ constructor: 'x' }] } }, { data: null }],
    'prototype nested': [{ ...base, data: { a: { prototype: null } } }, { data: null }],
    'a list of 1001 items': [{ ...base, data: { items: list(1_001) } }, { data: 'A list in the data may hold at most 1000 items.' }],
    'a nested list of 1001 items': [
      { ...base, data: { order: { lines: [{ codes: list(1_001) }] } } },
      { data: 'A list in the data may hold at most 1000 items.' },
    ],
    '10001 values': [
      { ...base, data: { ...values(10_000), one: 'more' } },
      { data: 'The data may hold at most 10000 values in all, counting those nested in objects and lists.' },
    ],
    // Valid JSON that PostgreSQL's jsonb cannot hold: refused when the send is written, never a 500.
    'U+0000 in a value': [{ ...base, data: { name: 'a\u0000b' } }, { data: 'The data holds a value that cannot be stored, such as the character U+0000.' }],
    'U+0000 in a nested key': [
      { ...base, data: { order: { 'line\u0000': 1 } } },
      { data: 'The data holds a value that cannot be stored, such as the character U+0000.' },
    ],
  });
  // The same refusals in Spanish.
  const spanish = await system.send(tenant, { ...base, data: { items: list(1_001), more: values(10_000) } }, { 'accept-language': 'es' });
  assert.equal(spanish.status, 422, spanish.text);
  assert.deepEqual(spanish.body, {
    data: [
      'Una lista de los datos puede contener como máximo 1000 elementos.',
      'Los datos pueden contener como máximo 10000 valores en total, contando los anidados en objetos y listas.',
    ],
  });
});

test('any other top-level field is refused with ["Unknown field."], an API key in the body included', async () => {
  await assertRefusals({
    'an extra field': [{ ...base, extra: 1 }, { extra: unknown }],
    'an API key in the body': [{ ...base, api_key: tenant.apiKey }, { api_key: unknown }],
    'a top-level __proto__': [withRawMember(base, '"__proto__":{"admin":true}'), { ['__proto__']: unknown }],
    'constructor at the top level': [{ ...base, constructor: 'x' }, { constructor: unknown }],
    'a field name in another case': [
      { ...without('template'), Template: 'welcome' },
      { Template: unknown, template: required },
    ],
    'several unknown fields': [
      { ...base, a: 1, b: null },
      { a: unknown, b: unknown },
    ],
  });
});

test('every refused field is reported at once', async () => {
  await assertRefusals({
    'an empty object': [{}, { template: required, to: required, channel: required, data: required }],
    'every field wrong and two unknown': [
      { template: 'bad slug!', to: 'Ada <ada@example.com>', channel: 'sms', data: [], extra: 1, api_key: 'x' },
      { template: null, to: null, channel: null, data: expectsObject, extra: unknown, api_key: unknown },
    ],
    // Fields are judged before the template is looked up (check 11 before 12).
    'an unknown template with a wrong channel': [{ ...base, template: 'no-such-template', channel: 'sms' }, { channel: null }],
  });
});

test('values at the limits are accepted: every slug character, a 100-character slug, a 254-character address, data 32 levels deep, a list of 1000 items, 10000 values', async () => {
  const key = await anotherKey(system, tenant, 'limits');
  assertAccepted(await system.send(key, { ...base, template: 's'.repeat(100) }));
  assertAccepted(await system.send(key, { ...base, to: addressOfLength(254) }));
  assertAccepted(await system.send(key, { ...base, data: nested(32) }));
  assertAccepted(await system.send(key, { ...base, data: { items: list(1_000) } }));
  assertAccepted(await system.send(key, { ...base, data: values(10_000) }));
  assertAccepted(
    await system.send(key, {
      ...base,
      data: { list: JSON.parse(`${'['.repeat(31)}${']'.repeat(31)}`) as unknown, text: 'constructor is fine as a value', n: null },
    }),
  );
  assertAccepted(await system.send(key, { ...base, template: 'Every-kind_Of-slug_09', data: {} }));
});

test('an unknown template slug is 404 template_not_found; an inactive one is 422 {template: [...]}; nothing is written', async () => {
  const key = await anotherKey(system, tenant, 'templates');
  const before = await writtenRows(system.db);
  const missing = await system.send(key, validBody('no-such-template'));
  assertCoded(missing, 404, 'template_not_found');
  const inactive = await system.send(key, validBody('retired'));
  assertFieldErrors(inactive, ['template']);
  // The slug is exact: another case is another template.
  assertCoded(await system.send(key, validBody('WELCOME')), 404, 'template_not_found');
  assert.deepEqual(await writtenRows(system.db), before);
  // Once activated, the same request is accepted.
  await system.putTemplate(tenant.projectId, 'retired', { active: true });
  assertAccepted(await system.send(key, validBody('retired')));
});

test("data must satisfy the template's declared variables: 422 {data: [...]} naming each variable at fault", async () => {
  const key = await anotherKey(system, tenant, 'variables');
  const before = await writtenRows(system.db);
  const cases: Array<[string, Record<string, unknown>, string[]]> = [
    ['both variables missing', {}, ['name', 'amount']],
    ['a variable of the wrong type', { name: 7, amount: 5 }, ['name']],
    ['a variable out of range', { name: 'Ada', amount: 0 }, ['amount']],
    ['an undeclared variable', { name: 'Ada', amount: 5, discount: 10 }, ['discount']],
  ];
  for (const [label, data, variables] of cases) {
    const response = await system.send(key, validBody('invoice', { data }));
    assertFieldErrors(response, ['data']);
    const messages = (response.body.data as string[]).join(' | ');
    for (const variable of variables) assert.match(messages, new RegExp(`\\b${variable}\\b`), `${label}: ${messages}`);
  }
  assert.deepEqual(await writtenRows(system.db), before);
  assertAccepted(await system.send(key, validBody('invoice', { data: { name: 'Ada', amount: 5 } })));
  // A template that declares nothing takes any object.
  assertAccepted(await system.send(key, validBody('welcome', { data: { anything: [1, { nested: true }] } })));
});
