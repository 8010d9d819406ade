import assert from 'node:assert/strict';
import { test } from 'node:test';
import fc from 'fast-check';
import { type Language, translate } from '../i18n/messages.ts';
import { maxDataArrayItems, maxDataDepth, maxDataElements, parseFrom, parseRfc3339, sendAtOf, shapeOf, validateSendBody } from './validation.ts';

const valid = { template: 'welcome_v2-a', to: 'ana@example.com', channel: 'email', data: { name: 'Ana' } };

/** The 422 body the caller would get, in `language`; undefined when the body is valid. */
function refusal(input: Record<string, unknown>, language: Language = 'en'): Record<string, string[]> | undefined {
  const result = validateSendBody(input);
  if (result.valid) return undefined;
  return Object.fromEntries([...result.fields].map(([field, messages]) => [field, messages.map((message) => translate(language, message))]));
}

const nested = (levels: number): Record<string, unknown> => {
  let value: Record<string, unknown> = {};
  for (let level = 1; level < levels; level += 1) value = { next: value };
  return value;
};

test('a body following every rule is valid and returned as it is', () => {
  assert.deepEqual(validateSendBody(valid), { valid: true, body: valid });
  assert.equal(refusal({ ...valid, template: 'x'.repeat(100), data: nested(maxDataDepth) }), undefined);
  assert.equal(refusal({ ...valid, to: `${'a'.repeat(64)}@example.com`, data: { list: [{ deep: [1, 'two', null, true] }] } }), undefined);
});

test('every missing field is reported at once', () => {
  assert.deepEqual(refusal({}), {
    template: ['This field is required.'],
    to: ['This field is required.'],
    channel: ['This field is required.'],
    data: ['This field is required.'],
  });
  assert.deepEqual(refusal({}, 'es'), {
    template: ['Este campo es obligatorio.'],
    to: ['Este campo es obligatorio.'],
    channel: ['Este campo es obligatorio.'],
    data: ['Este campo es obligatorio.'],
  });
});

test('a wrong type names the expected type, and only that', () => {
  const body = { template: 5, to: ['a@b.co'], channel: null, data: [] };
  assert.deepEqual(refusal(body), {
    template: ['Expected a string.'],
    to: ['Expected a string.'],
    channel: ['Expected a string.'],
    data: ['Expected a JSON object.'],
  });
  assert.deepEqual(refusal(body, 'es'), {
    template: ['Se esperaba una cadena de texto.'],
    to: ['Se esperaba una cadena de texto.'],
    channel: ['Se esperaba una cadena de texto.'],
    data: ['Se esperaba un objeto JSON.'],
  });
  assert.deepEqual(refusal({ ...valid, data: null }), { data: ['Expected a JSON object.'] });
  assert.deepEqual(refusal({ ...valid, data: 'x' }), { data: ['Expected a JSON object.'] });
});

test('the template must be a 1-100 character slug', () => {
  assert.deepEqual(refusal({ ...valid, template: '' }), { template: ['This field may not be blank.'] });
  assert.deepEqual(refusal({ ...valid, template: '' }, 'es'), { template: ['Este campo no puede estar vacío.'] });
  assert.deepEqual(refusal({ ...valid, template: 'x'.repeat(101) }), { template: ['Ensure this field has no more than 100 characters.'] });
  assert.deepEqual(refusal({ ...valid, template: 'x'.repeat(101) }, 'es'), { template: ['Asegúrese de que este campo no tenga más de 100 caracteres.'] });
  for (const template of ['wel come', 'wel.come', 'ñandú', 'a/b', 'x\n']) {
    assert.deepEqual(refusal({ ...valid, template }), { template: ['Use only letters, digits, underscores and hyphens.'] }, template);
  }
  assert.deepEqual(refusal({ ...valid, template: 'a b' }, 'es'), { template: ['Use solo letras, dígitos, guiones bajos y guiones.'] });
});

test('the recipient must be one plain email address', () => {
  for (const to of [
    'not-an-email',
    'Ana <ana@example.com>',
    'ana@example.com, bo@example.com',
    'ana@example.com;bo@example.com',
    'ana@localhost',
    'ana@[127.0.0.1]',
    ' ana@example.com',
    'ana@',
    '@example.com',
    `${'a'.repeat(65)}@example.com`,
  ]) {
    assert.deepEqual(refusal({ ...valid, to }), { to: ['Enter a valid email address.'] }, to);
  }
  assert.deepEqual(refusal({ ...valid, to: 'nope' }, 'es'), { to: ['Introduzca una dirección de correo electrónico válida.'] });
});

test('the recipient is at most 254 characters', () => {
  const long = `${'a'.repeat(60)}@${'b'.repeat(63)}.${'c'.repeat(63)}.${'d'.repeat(63)}.com`;
  assert.ok(long.length > 254);
  assert.deepEqual(refusal({ ...valid, to: long }), { to: ['Ensure this field has no more than 254 characters.'] });
  assert.deepEqual(refusal({ ...valid, to: long }, 'es'), { to: ['Asegúrese de que este campo no tenga más de 254 caracteres.'] });
});

test('control characters in the recipient are refused for what they are', () => {
  for (const to of ['ana@example.com\r\nBcc: eve@example.com', 'ana@example.com\n', 'ana\u0000@example.com', 'ana@example.com\u0085']) {
    assert.deepEqual(refusal({ ...valid, to }), { to: ['Control characters, such as line breaks, are not allowed.'] }, JSON.stringify(to));
  }
  assert.deepEqual(refusal({ ...valid, to: 'a@b.co\r\n' }, 'es'), { to: ['No se permiten caracteres de control, como los saltos de línea.'] });
});

test('the only channel is email', () => {
  for (const channel of ['sms', 'EMAIL', '', 'email ']) {
    assert.deepEqual(refusal({ ...valid, channel }), { channel: ['The only supported channel is "email".'] }, channel);
  }
  assert.deepEqual(refusal({ ...valid, channel: 'sms' }, 'es'), { channel: ['El único canal admitido es "email".'] });
});

test('data nests at most 32 levels', () => {
  assert.deepEqual(refusal({ ...valid, data: nested(maxDataDepth + 1) }), { data: ['Nesting is limited to 32 levels.'] });
  assert.deepEqual(refusal({ ...valid, data: { list: [[[[]]]], deep: nested(maxDataDepth) } }), { data: ['Nesting is limited to 32 levels.'] });
  assert.deepEqual(refusal({ ...valid, data: nested(maxDataDepth + 1) }, 'es'), { data: ['El anidamiento está limitado a 32 niveles.'] });
  const parsed = JSON.parse(`{"data":{"a":${'['.repeat(50_000)}${']'.repeat(50_000)}}}`) as Record<string, unknown>;
  // 50,000 nested arrays are also 50,000 values.
  assert.deepEqual(refusal({ ...valid, data: parsed.data }), {
    data: ['Nesting is limited to 32 levels.', 'The data may hold at most 10000 values in all, counting those nested in objects and lists.'],
  });
});

test('a list inside data holds at most 1000 items, at any depth', () => {
  const list = (length: number): number[] => Array.from({ length }, (_, index) => index);
  assert.equal(refusal({ ...valid, data: { items: list(maxDataArrayItems) } }), undefined);
  assert.deepEqual(refusal({ ...valid, data: { items: list(maxDataArrayItems + 1) } }), { data: ['A list in the data may hold at most 1000 items.'] });
  assert.deepEqual(refusal({ ...valid, data: { a: { b: [[], list(maxDataArrayItems + 1)] } } }), { data: ['A list in the data may hold at most 1000 items.'] });
  assert.deepEqual(refusal({ ...valid, data: { items: list(maxDataArrayItems + 1) } }, 'es'), {
    data: ['Una lista de los datos puede contener como máximo 1000 elementos.'],
  });
  assert.equal(shapeOf({ a: [1, [2, 3]] }).longestArray, 2);
  assert.equal(shapeOf({ a: [1, [2, 3, 4]], b: [] }).longestArray, 3);
});

test('data holds at most 10000 values in all, members and items at every depth counted', () => {
  // 10 lists of 999 items and their 10 members: 10,000 values.
  const atLimit = Object.fromEntries(Array.from({ length: 10 }, (_, index) => [`list${index}`, Array.from({ length: 999 }, () => ({}))]));
  assert.equal(refusal({ ...valid, data: atLimit }), undefined);
  const over = { ...atLimit, one: 'more' };
  assert.deepEqual(refusal({ ...valid, data: over }), { data: ['The data may hold at most 10000 values in all, counting those nested in objects and lists.'] });
  assert.deepEqual(refusal({ ...valid, data: over }, 'es'), {
    data: ['Los datos pueden contener como máximo 10000 valores en total, contando los anidados en objetos y listas.'],
  });
  // Nested values count too: 10 lists of 100 objects of 10 members each is 10 + 1,000 + 10,000 values.
  const nestedValues = Object.fromEntries(
    Array.from({ length: 10 }, (_, index) => [
      `l${index}`,
      Array.from({ length: 100 }, () => Object.fromEntries(Array.from({ length: 10 }, (_, key) => [`k${key}`, key]))),
    ]),
  );
  assert.deepEqual(refusal({ ...valid, data: nestedValues }), {
    data: ['The data may hold at most 10000 values in all, counting those nested in objects and lists.'],
  });
  assert.equal(shapeOf({ a: [1, { b: 2 }] }).elements, 4);
  assert.equal(maxDataElements, 10_000);
});

test('a list over the limit inside a body over the total reports both, with every other fault of data', () => {
  const items = Array.from({ length: maxDataElements + 1 }, () => 0);
  assert.deepEqual(refusal({ ...valid, data: { items, deep: JSON.parse('{"constructor":1}') as unknown } }), {
    data: [
      'The keys "__proto__", "constructor" and "prototype" are not allowed.',
      'A list in the data may hold at most 1000 items.',
      'The data may hold at most 10000 values in all, counting those nested in objects and lists.',
    ],
  });
});

test('prototype-related keys are refused anywhere inside data', () => {
  for (const source of ['{"__proto__":{}}', '{"a":{"constructor":1}}', '{"a":[{"b":{"prototype":null}}]}']) {
    const data = JSON.parse(source) as unknown;
    assert.deepEqual(refusal({ ...valid, data }), { data: ['The keys "__proto__", "constructor" and "prototype" are not allowed.'] }, source);
  }
  assert.deepEqual(refusal({ ...valid, data: { constructor: 1 } }, 'es'), {
    data: ['Las claves "__proto__", "constructor" y "prototype" no están permitidas.'],
  });
  assert.equal(refusal({ ...valid, data: { text: '__proto__', list: ['constructor'] } }), undefined);
});

test('any other top-level field is unknown, an API key and __proto__ included', () => {
  const body = JSON.parse(
    '{"template":"welcome","to":"ana@example.com","channel":"email","data":{},"__proto__":{"template":"x"},"api_key":"k","Template":"x"}',
  ) as Record<string, unknown>;
  const expected = JSON.parse('{"__proto__":["Unknown field."],"api_key":["Unknown field."],"Template":["Unknown field."]}') as unknown;
  assert.deepEqual(refusal(body), expected);
  assert.deepEqual(refusal({ ...valid, extra: 1 }, 'es'), { extra: ['Campo desconocido.'] });
});

test('a __proto__ body key does not supply the required fields', () => {
  const parsed = JSON.parse('{"__proto__":{"template":"x","to":"a@b.co","channel":"email","data":{}}}') as Record<string, unknown>;
  const result = refusal(parsed);
  assert.deepEqual(Object.keys(result ?? {}).sort(), ['__proto__', 'channel', 'data', 'template', 'to']);
});

test('every field is judged in the same answer', () => {
  assert.deepEqual(refusal({ template: 'a b', to: 'x', channel: 'sms', data: [], more: true }), {
    template: ['Use only letters, digits, underscores and hyphens.'],
    to: ['Enter a valid email address.'],
    channel: ['The only supported channel is "email".'],
    data: ['Expected a JSON object.'],
    more: ['Unknown field.'],
  });
});

test('random bodies never throw and yield either a valid body or field messages', () => {
  const field = fc.oneof(fc.constantFrom('template', 'to', 'channel', 'data', '__proto__', 'constructor', 'toString'), fc.string());
  const body = fc.dictionary(field, fc.jsonValue({ maxDepth: 5 }), { maxKeys: 8 });
  const shaped = fc.record(
    {
      template: fc.oneof(fc.stringMatching(/^[A-Za-z0-9_-]{0,101}$/), fc.jsonValue()),
      to: fc.oneof(fc.emailAddress(), fc.string(), fc.jsonValue()),
      channel: fc.oneof(fc.constant('email'), fc.jsonValue()),
      data: fc.oneof(fc.object(), fc.jsonValue()),
    },
    { requiredKeys: [] },
  );
  fc.assert(
    fc.property(fc.oneof(body, shaped), fc.constantFrom<Language>('en', 'es'), (input, language) => {
      // Through JSON text, as the route sees it: `__proto__` keys become own properties.
      const parsed = JSON.parse(JSON.stringify(input)) as Record<string, unknown>;
      const result = validateSendBody(parsed);
      if (result.valid) {
        assert.deepEqual(Object.keys(result.body).sort(), ['channel', 'data', 'template', 'to']);
        return;
      }
      assert.ok(result.fields.size > 0);
      for (const [name, messages] of result.fields) {
        assert.equal(typeof name, 'string');
        assert.ok(messages.length > 0);
        for (const message of messages) {
          const rendered = translate(language, message);
          assert.ok(typeof rendered === 'string' && rendered.length > 0 && !rendered.includes('{'), rendered);
        }
      }
    }),
    { numRuns: 500 },
  );
});

test('send_at in the future, within 30 days, with Z or an offset, is valid', () => {
  const inAnHour = new Date(Date.now() + 3_600_000).toISOString();
  assert.equal(refusal({ ...valid, send_at: inAnHour }), undefined);
  assert.equal(refusal({ ...valid, send_at: new Date(Date.now() + 29 * 86_400_000).toISOString().replace('Z', '+00:00') }), undefined);
  const tomorrowInMadrid = new Date(Date.now() + 86_400_000 + 3_600_000).toISOString().replace(/\.\d+Z$/, '+01:00');
  assert.equal(refusal({ ...valid, send_at: tomorrowInMadrid }), undefined);
});

test('send_at that is not an RFC 3339 time with its offset is refused on send_at, in both languages', () => {
  const tomorrow = new Date(Date.now() + 86_400_000).toISOString();
  for (const sendAt of ['tomorrow', tomorrow.replace('Z', ''), tomorrow.slice(0, 10), '2099-02-30T10:00:00Z', `${tomorrow.slice(0, 11)}24:00:00Z`, '']) {
    assert.deepEqual(
      refusal({ ...valid, send_at: sendAt }),
      { send_at: ['Enter an RFC 3339 time with its offset, such as 2026-01-31T09:30:00Z or 2026-01-31T10:30:00+01:00.'] },
      sendAt,
    );
  }
  assert.deepEqual(refusal({ ...valid, send_at: 'tomorrow' }, 'es'), {
    send_at: ['Indique una hora RFC 3339 con su desfase, como 2026-01-31T09:30:00Z o 2026-01-31T10:30:00+01:00.'],
  });
  assert.deepEqual(refusal({ ...valid, send_at: 1_900_000_000 }), { send_at: ['Expected a string.'] });
});

test('send_at in the past, or more than 30 days ahead, is refused on send_at', () => {
  assert.deepEqual(refusal({ ...valid, send_at: new Date(Date.now() - 1_000).toISOString() }), {
    send_at: ['This time has already passed; omit send_at to send at once.'],
  });
  assert.deepEqual(refusal({ ...valid, send_at: new Date(Date.now() + 31 * 86_400_000).toISOString() }), {
    send_at: ['A send can be scheduled at most 30 days ahead.'],
  });
  assert.deepEqual(refusal({ ...valid, send_at: new Date(Date.now() + 31 * 86_400_000).toISOString() }, 'es'), {
    send_at: ['Un envío puede programarse como máximo con 30 días de antelación.'],
  });
});

test('parseRfc3339 reads the instant with its offset and refuses dates that do not exist; sendAtOf passes it on in UTC', () => {
  assert.equal(parseRfc3339('2026-01-31T10:30:00+01:00'), Date.UTC(2026, 0, 31, 9, 30));
  assert.equal(parseRfc3339('2026-01-31t09:30:00.5z'), Date.UTC(2026, 0, 31, 9, 30, 0, 500));
  assert.equal(parseRfc3339('2028-02-29T00:00:00Z'), Date.UTC(2028, 1, 29));
  assert.equal(
    sendAtOf({ template: 'w', to: 'a@example.com', channel: 'email', data: {}, send_at: '2026-01-31t10:30:00.5+01:00' }),
    '2026-01-31T09:30:00.500Z',
  );
  assert.equal(sendAtOf({ template: 'w', to: 'a@example.com', channel: 'email', data: {} }), '');
  for (const value of ['2026-02-29T00:00:00Z', '2026-13-01T00:00:00Z', '2026-01-31T09:30:60Z', '2026-01-31T09:30:00+24:00', '2026-01-31 09:30:00Z'])
    assert.equal(parseRfc3339(value), undefined, value);
});

test('from is an address, or a name and an address; parseFrom reads both parts', () => {
  for (const from of ['billing@acme.example', 'Acme Billing <billing@acme.example>', '"Acme, Inc." <billing@acme.example>', '  Ana <ana@acme.example> ']) {
    assert.equal(refusal({ ...valid, from }), undefined, from);
  }
  assert.deepEqual(parseFrom('billing@acme.example'), { address: 'billing@acme.example', name: '' });
  assert.deepEqual(parseFrom('"Acme, Inc." <billing@acme.example>'), { address: 'billing@acme.example', name: 'Acme, Inc.' });
  assert.deepEqual(parseFrom('  Ana   <ana@acme.example> '), { address: 'ana@acme.example', name: 'Ana' });
  assert.deepEqual(parseFrom('<ana@acme.example>'), { address: 'ana@acme.example', name: '' });
});

test('a from that is not one mailbox is refused on from, in both languages', () => {
  const mailbox = 'Enter an email address, or a name and an address as "Name <address@example.com>".';
  for (const from of [
    '',
    'not an address',
    'a@acme.example, b@acme.example',
    'Ana <a@acme.example>, Bob <b@acme.example>',
    'Ana <not-an-address>',
    '"Ana <a@acme.example>',
    'Ana "quoted" <a@acme.example>',
    `${'n'.repeat(201)} <a@acme.example>`,
  ]) {
    assert.deepEqual(refusal({ ...valid, from }), { from: [mailbox] }, from);
  }
  assert.deepEqual(refusal({ ...valid, from: 'Ana\r\nBcc: x@evil.example <a@acme.example>' }), {
    from: ['Control characters, such as line breaks, are not allowed.'],
  });
  assert.deepEqual(refusal({ ...valid, from: `Ana <${'a'.repeat(600)}@acme.example>` }), { from: ['Ensure this field has no more than 600 characters.'] });
  assert.deepEqual(refusal({ ...valid, from: 'nope' }, 'es'), {
    from: ['Introduzca una dirección de correo electrónico, o un nombre y una dirección como "Nombre <direccion@example.com>".'],
  });
  assert.deepEqual(refusal({ ...valid, from: ['a@acme.example'] }), { from: ['Expected a string.'] });
});
