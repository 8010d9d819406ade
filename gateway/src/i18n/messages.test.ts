import assert from 'node:assert/strict';
import { test } from 'node:test';
import { catalogues, languages, type MessageKey, text, translate } from './messages.ts';

const placeholders = (template: string): string[] => [...template.matchAll(/\{(\w+)\}/g)].map((match) => match[1] ?? '').sort();

test('every text exists in every language with the same placeholders', () => {
  const keys = Object.keys(catalogues.en) as MessageKey[];
  for (const language of languages) {
    assert.deepEqual(Object.keys(catalogues[language]).sort(), [...keys].sort(), language);
    for (const key of keys) {
      assert.ok(catalogues[language][key].trim().length > 0, `${language} ${key}`);
      assert.deepEqual(placeholders(catalogues[language][key]), placeholders(catalogues.en[key]), `${language} ${key}`);
    }
  }
});

test('Spanish texts are translations, not copies of the English ones', () => {
  for (const key of Object.keys(catalogues.en) as MessageKey[]) assert.notEqual(catalogues.es[key], catalogues.en[key], key);
});

test('placeholders are filled from the parameters', () => {
  assert.equal(translate('en', text('throttled', { seconds: 7 })), 'Request was throttled. Expected available in 7 seconds.');
  assert.equal(translate('es', text('throttled', { seconds: 7 })), 'La solicitud fue limitada. Se espera que esté disponible en 7 segundos.');
  assert.equal(translate('en', text('payload_too_large', { limit: 262144 })), 'The request body is larger than the limit of 262144 bytes.');
});

test('a parameter value is inserted literally, never interpreted', () => {
  assert.equal(translate('en', text('method_not_allowed', { method: '{seconds} $& $1' })), 'Method "{seconds} $& $1" not allowed.');
});
