import assert from 'node:assert/strict';
import { test } from 'node:test';
import { translator } from '../i18n/texts.ts';
import { parseFilters, utcInstant } from './message-filters.ts';

const t = translator('en');

test('a time typed in the form is read as UTC, with or without seconds', () => {
  assert.equal(utcInstant('2026-01-31T09:30'), '2026-01-31T09:30:00.000Z');
  assert.equal(utcInstant('2026-01-31T09:30:15'), '2026-01-31T09:30:15.000Z');
  for (const wrong of ['2026-01-31', 'yesterday', '2026-13-01T00:00', '2026-01-31T09:30Z']) assert.equal(utcInstant(wrong), undefined, wrong);
});

test('filters go to the search as given, and the cursor only when it has the shape of one dispatch-svc gives', () => {
  const parsed = parseFilters(
    { state: 'failed', template: 'welcome', recipient: ' Ada@Example.com ', from: '2026-01-31T09:00', until: '', before: 'djEuMTc2NDA4MDAwMDAwMDAwMC40Mg' },
    t,
  );
  assert.deepEqual(parsed.faults, {});
  assert.deepEqual(parsed.search, {
    state: 'failed',
    template: 'welcome',
    recipient: 'Ada@Example.com',
    createdFrom: '2026-01-31T09:00:00.000Z',
    createdUntil: '',
    cursor: 'djEuMTc2NDA4MDAwMDAwMDAwMC40Mg',
    tag: '',
  });
  assert.equal(parseFilters({ before: '1 OR 1=1' }, t).search.cursor, '');
  assert.equal(parseFilters({ before: 'a'.repeat(101) }, t).search.cursor, '', 'longer than any cursor given');
  assert.equal(parseFilters({ state: ['sent', 'failed'] }, t).search.state, 'sent', 'a repeated parameter counts once');
});

test('a mistaken state or time is named, and the form keeps what was typed', () => {
  const parsed = parseFilters({ state: 'lost', from: 'tomorrow' }, t);
  assert.deepEqual(parsed.faults, { state: 'Choose one of the states in the list.', from: 'Enter a date and time, like 2026-01-31T09:30.' });
  assert.equal(parsed.filters.from, 'tomorrow');
  assert.equal(parsed.search.state, '');
});

test('a tag goes to the search as typed (trimmed); a malformed one is named and searched for by nobody', () => {
  assert.equal(parseFilters({ tag: ' spring-2026 ' }, t).search.tag, 'spring-2026');
  const parsed = parseFilters({ tag: 'two words' }, t);
  assert.deepEqual(parsed.faults, { tag: 'A tag is 1 to 64 letters, digits, underscores or hyphens.' });
  assert.equal(parsed.filters.tag, 'two words');
  assert.equal(parsed.search.tag, '');
  assert.deepEqual(parseFilters({ tag: 'x'.repeat(65) }, translator('es')).faults, {
    tag: 'Una etiqueta tiene de 1 a 64 letras, dígitos, guiones bajos o guiones.',
  });
});
