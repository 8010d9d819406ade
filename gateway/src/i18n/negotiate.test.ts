import assert from 'node:assert/strict';
import { test } from 'node:test';
import { negotiateLanguage } from './negotiate.ts';

test('without Accept-Language the answer is in English', () => {
  assert.equal(negotiateLanguage(undefined), 'en');
  assert.equal(negotiateLanguage(''), 'en');
});

test('a regional Spanish tag selects Spanish', () => {
  assert.equal(negotiateLanguage('es-MX'), 'es');
  assert.equal(negotiateLanguage('ES-es'), 'es');
});

test('q-values decide between the languages offered', () => {
  assert.equal(negotiateLanguage('es;q=0.9,en;q=0.8'), 'es');
  assert.equal(negotiateLanguage('en;q=0.8, es;q=0.9'), 'es');
  assert.equal(negotiateLanguage('es;q=0.5, en'), 'en');
  assert.equal(negotiateLanguage('fr-CA, fr;q=0.9, es;q=0.4, en;q=0.3'), 'es');
});

test('on equal weights the language listed first wins', () => {
  assert.equal(negotiateLanguage('es, en'), 'es');
  assert.equal(negotiateLanguage('en, es'), 'en');
});

test('a language weighted zero is never chosen', () => {
  assert.equal(negotiateLanguage('es;q=0'), 'en');
  assert.equal(negotiateLanguage('en;q=0, es;q=0.1'), 'es');
});

test('the wildcard stands for the languages not named otherwise', () => {
  assert.equal(negotiateLanguage('*'), 'en');
  assert.equal(negotiateLanguage('en;q=0, *'), 'es');
  assert.equal(negotiateLanguage('fr, *;q=0.5'), 'en');
});

test('the most specific range decides a language weight', () => {
  assert.equal(negotiateLanguage('es;q=0.1, es-MX;q=1, en;q=0.5'), 'en');
  assert.equal(negotiateLanguage('es-MX;q=0.2, es-AR;q=0.9, en;q=0.5'), 'es');
});

test('only unsupported or malformed preferences fall back to English', () => {
  assert.equal(negotiateLanguage('fr, de;q=0.9'), 'en');
  assert.equal(negotiateLanguage('es;q=2'), 'en');
  assert.equal(negotiateLanguage('es;q=abc, en;q=0.1'), 'en');
  assert.equal(negotiateLanguage(';;;, ,'), 'en');
  assert.equal(negotiateLanguage('e$s'), 'en');
});
