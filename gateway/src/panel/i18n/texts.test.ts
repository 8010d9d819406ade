import assert from 'node:assert/strict';
import { test } from 'node:test';
import { languages } from '../../i18n/messages.ts';
import { type PanelTextKey, panelCatalogues, translator } from './texts.ts';

const placeholders = (template: string): string[] => [...template.matchAll(/\{(\w+)\}/g)].map((match) => match[1] ?? '').sort();

test('every panel text exists in every language with the same placeholders', () => {
  const keys = Object.keys(panelCatalogues.en) as PanelTextKey[];
  for (const language of languages) {
    assert.deepEqual(Object.keys(panelCatalogues[language]).sort(), [...keys].sort(), language);
    for (const key of keys) {
      assert.ok(panelCatalogues[language][key].trim().length > 0, `${language} ${key}`);
      assert.deepEqual(placeholders(panelCatalogues[language][key]), placeholders(panelCatalogues.en[key]), `${language} ${key}`);
    }
  }
});

test('placeholders are filled literally, in the language asked for', () => {
  assert.equal(translator('es')('signIn.throttled', { seconds: 30 }), 'Demasiados intentos de inicio de sesión. Vuelva a intentarlo en 30 segundos.');
  assert.equal(translator('en')('message.title', { id: '$& {id}' }), 'Message $& {id}');
});
