import assert from 'node:assert/strict';
import { test } from 'node:test';
import { type Language, translate } from '../i18n/messages.ts';
import { labelFields } from './labels.ts';
import { validateSendBody } from './validation.ts';

const valid = { template: 'welcome', to: 'ana@example.com', channel: 'email', data: {} };

/** The 422 body the caller would get, in `language`; undefined when the body is valid. */
function refusal(extra: Record<string, unknown>, language: Language = 'en'): Record<string, string[]> | undefined {
  const result = validateSendBody({ ...valid, ...extra });
  if (result.valid) return undefined;
  return Object.fromEntries([...result.fields].map(([field, messages]) => [field, messages.map((message) => translate(language, message))]));
}

const keys = (count: number, prefix = 'k'): Record<string, string> =>
  Object.fromEntries(Array.from({ length: count }, (_, index) => [`${prefix}${index}`, 'v']));

test('tags and metadata within every bound are valid, and go to dispatch-svc as given', () => {
  const labels = { tags: Array.from({ length: 10 }, (_, index) => `${'t'.repeat(62)}-${index}`), metadata: { ...keys(19), ['k'.repeat(40)]: 'é'.repeat(256) } };
  const result = validateSendBody({ ...valid, ...labels });
  assert.ok(result.valid);
  assert.deepEqual(labelFields(result.body), { tags: labels.tags, metadataJson: JSON.stringify(labels.metadata) });
  assert.equal(refusal({ tags: [], metadata: {} }), undefined);
  assert.deepEqual(labelFields({}), { tags: [], metadataJson: '' });
});

test('each rule of tags has its own message, each given once however many tags break it', () => {
  assert.deepEqual(refusal({ tags: 'news' }), { tags: ['Expected a list of strings.'] });
  assert.deepEqual(refusal({ tags: ['ok', 7] }), { tags: ['Expected a list of strings.'] });
  assert.deepEqual(refusal({ tags: ['a', 'b', 'a'] }), { tags: ['Each tag may appear only once.'] });
  assert.deepEqual(refusal({ tags: Array.from({ length: 11 }, (_, index) => `t${index}`) }), { tags: ['At most 10 tags are allowed.'] });
  const broken = { tags: ['', 'x'.repeat(65), 'a b', 'ñ', 'ok'] };
  assert.deepEqual(refusal(broken), { tags: ['Each tag must be 1 to 64 letters, digits, underscores or hyphens.'] });
  assert.deepEqual(refusal(broken, 'es'), { tags: ['Cada etiqueta debe tener de 1 a 64 letras, dígitos, guiones bajos o guiones.'] });
});

test('each rule of metadata has its own message, in English and Spanish', () => {
  assert.deepEqual(refusal({ metadata: ['a'] }), { metadata: ['Expected a JSON object.'] });
  assert.deepEqual(refusal({ metadata: { a: 1, b: { nested: 'x' } } }), { metadata: ['Each value must be a string.'] });
  assert.deepEqual(refusal({ metadata: keys(21) }), { metadata: ['At most 20 keys are allowed.'] });
  assert.deepEqual(refusal({ metadata: { 'a b': 'v', ['k'.repeat(41)]: 'v', '': 'v' } }), {
    metadata: ['Each key must be 1 to 40 letters, digits, underscores or hyphens.'],
  });
  assert.deepEqual(refusal({ metadata: { a: 'x'.repeat(257), b: 'two\nlines' } }), {
    metadata: ['Each value may hold at most 256 characters.', 'Control characters, such as line breaks, are not allowed.'],
  });
  assert.deepEqual(refusal({ metadata: JSON.parse('{"__proto__": "x"}') }), {
    metadata: ['The keys "__proto__", "constructor" and "prototype" are not allowed.'],
  });
  assert.deepEqual(refusal({ metadata: keys(21), tags: ['a', 'a'] }, 'es'), {
    tags: ['Cada etiqueta puede aparecer una sola vez.'],
    metadata: ['Se permiten como máximo 20 claves.'],
  });
  assert.deepEqual(refusal({ metadata: { a: 'x'.repeat(257) } }, 'es'), { metadata: ['Cada valor puede contener como máximo 256 caracteres.'] });
  assert.deepEqual(refusal({ metadata: { a: 1 } }, 'es'), { metadata: ['Cada valor debe ser una cadena de texto.'] });
  assert.deepEqual(refusal({ metadata: { 'a b': 'v' } }, 'es'), { metadata: ['Cada clave debe tener de 1 a 40 letras, dígitos, guiones bajos o guiones.'] });
  assert.deepEqual(refusal({ tags: Array.from({ length: 11 }, (_, index) => `t${index}`) }, 'es'), { tags: ['Se permiten como máximo 10 etiquetas.'] });
  assert.deepEqual(refusal({ tags: 'x' }, 'es'), { tags: ['Se esperaba una lista de cadenas de texto.'] });
});
