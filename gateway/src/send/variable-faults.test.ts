import assert from 'node:assert/strict';
import { test } from 'node:test';
import { type Language, translate } from '../i18n/messages.ts';
import { variableFault } from './variable-faults.ts';

/** What a caller of `language` reads for a violation dispatch-svc sent. */
function read(language: Language, path: string, keyword: string, params: Record<string, unknown> = {}): string {
  const message = variableFault(JSON.stringify({ path, keyword, params }));
  assert.notEqual(typeof message, 'string', `${keyword} is rendered, not passed on`);
  return typeof message === 'string' ? message : translate(language, message);
}

test('each ajv keyword reads as a sentence in English and in Spanish, naming the variable in both', () => {
  const cases: Array<[string, string, Record<string, unknown>, string, string]> = [
    ['name', 'required', {}, 'name: is required.', 'name: es obligatorio.'],
    ['extra', 'additionalProperties', {}, 'extra: is not a variable of this template.', 'extra: no es una variable de esta plantilla.'],
    ['amount', 'type', { type: 'integer' }, 'amount: must be an integer.', 'amount: debe ser un número entero.'],
    ['name', 'type', { type: 'string' }, 'name: must be a string.', 'name: debe ser una cadena de texto.'],
    ['price', 'type', { type: 'number' }, 'price: must be a number.', 'price: debe ser un número.'],
    ['vip', 'type', { type: 'boolean' }, 'vip: must be true or false.', 'vip: debe ser verdadero o falso (true o false).'],
    ['order', 'type', { type: 'object' }, 'order: must be a JSON object.', 'order: debe ser un objeto JSON.'],
    ['items', 'type', { type: 'array' }, 'items: must be an array.', 'items: debe ser una lista (array).'],
    ['gone', 'type', { type: 'null' }, 'gone: must be null.', 'gone: debe ser nulo (null).'],
    ['note', 'type', { type: ['string', 'null'] }, 'note: must be of type string, null.', 'note: debe ser de tipo string, null.'],
    ['name', 'minLength', { limit: 2 }, 'name: must have at least 2 characters.', 'name: debe tener al menos 2 caracteres.'],
    ['name', 'maxLength', { limit: 9 }, 'name: must have at most 9 characters.', 'name: debe tener como máximo 9 caracteres.'],
    ['amount', 'minimum', { limit: 1 }, 'amount: must be greater than or equal to 1.', 'amount: debe ser mayor o igual que 1.'],
    ['amount', 'maximum', { limit: 9 }, 'amount: must be less than or equal to 9.', 'amount: debe ser menor o igual que 9.'],
    ['rate', 'exclusiveMinimum', { limit: 0 }, 'rate: must be greater than 0.', 'rate: debe ser mayor que 0.'],
    ['rate', 'exclusiveMaximum', { limit: 1 }, 'rate: must be less than 1.', 'rate: debe ser menor que 1.'],
    ['tags', 'minItems', { limit: 1 }, 'tags: must have at least 1 items.', 'tags: debe tener al menos 1 elementos.'],
    ['tags', 'maxItems', { limit: 3 }, 'tags: must have at most 3 items.', 'tags: debe tener como máximo 3 elementos.'],
    ['plan', 'enum', {}, 'plan: must be one of the allowed values.', 'plan: debe ser uno de los valores permitidos.'],
    ['kind', 'const', {}, 'kind: must be the value the template requires.', 'kind: debe ser el valor que exige la plantilla.'],
    ['code', 'pattern', { pattern: '^[A-Z]{2}$' }, 'code: must match the pattern "^[A-Z]{2}$".', 'code: debe coincidir con el patrón "^[A-Z]{2}$".'],
    ['email', 'format', { format: 'email' }, 'email: must have the format "email".', 'email: debe tener el formato "email".'],
    ['step', 'multipleOf', {}, 'step: does not satisfy the rule "multipleOf" of the template.', 'step: no cumple la regla "multipleOf" de la plantilla.'],
  ];
  for (const [path, keyword, params, en, es] of cases) {
    assert.equal(read('en', path, keyword, params), en, `${keyword} en`);
    assert.equal(read('es', path, keyword, params), es, `${keyword} es`);
  }
});

test('nested variables keep their dotted path, and a fault of data itself is named data', () => {
  assert.equal(read('es', 'order.items.0.id', 'required'), 'order.items.0.id: es obligatorio.');
  assert.equal(read('en', '', 'minProperties', {}), 'data: does not satisfy the rule "minProperties" of the template.');
});

test('a violation missing the parameter its text needs falls back to the general rule text', () => {
  assert.equal(read('en', 'amount', 'type', {}), 'amount: does not satisfy the rule "type" of the template.');
  assert.equal(read('en', 'amount', 'minimum', { limit: 'one' }), 'amount: does not satisfy the rule "minimum" of the template.');
  assert.equal(read('en', 'code', 'pattern'), 'code: does not satisfy the rule "pattern" of the template.');
  assert.equal(read('en', 'name', 'required', null as unknown as Record<string, unknown>), 'name: is required.');
});

test('an entry that is not a violation is passed on verbatim', () => {
  for (const entry of ['name: is required', '{not json', '[1]', 'null', '{"path":1,"keyword":"type"}', '{"path":"a"}']) {
    assert.equal(variableFault(entry), entry);
  }
});
