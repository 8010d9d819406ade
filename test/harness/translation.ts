// The same refusal produced in English and in Spanish, compared text by text (docs/contract.md, "Errors in general": Accept-Language chooses the
// language, Content-Language names it, codes and field names never change).
import assert from 'node:assert/strict';
import type { HttpResult } from './system.ts';

/** Produces one refusal in the language asked for (undefined: no Accept-Language at all). */
export type Situation = (acceptLanguage: string | undefined) => Promise<HttpResult>;

export function languageHeader(acceptLanguage: string | undefined): Record<string, string> {
  return acceptLanguage === undefined ? {} : { 'accept-language': acceptLanguage };
}

/** Every text of a response: `detail`, or each 422 message under its field. */
function texts(response: HttpResult): Map<string, string> {
  const found = new Map<string, string>();
  for (const [field, value] of Object.entries(response.body)) {
    if (field === 'detail' && typeof value === 'string') found.set('detail', value);
    if (Array.isArray(value)) {
      value.forEach((message, index) => {
        found.set(`${field}[${index}]`, String(message));
      });
    }
  }
  return found;
}

/** Every English text seen in this process, so that a Spanish answer that repeats one is caught whatever the situation. */
const englishSeen = new Set<string>();

/**
 * Runs `situation` without Accept-Language (English, the default) and with `es`: same status, field names and code;
 * Content-Language `en` and `es`; every text different from its English counterpart and from any English text seen.
 */
export async function assertTranslated(label: string, situation: Situation): Promise<{ en: HttpResult; es: HttpResult }> {
  const en = await situation(undefined);
  const es = await situation('es');
  const show = `${label}:\n  en ${en.status} ${en.text}\n  es ${es.status} ${es.text}`;
  assert.ok(en.status >= 400, show);
  assert.equal(es.status, en.status, show);
  assert.equal(en.headers.get('content-language'), 'en', show);
  assert.equal(es.headers.get('content-language'), 'es', show);
  assert.deepEqual(Object.keys(es.body).sort(), Object.keys(en.body).sort(), `field names never change: ${show}`);
  assert.equal(es.body.code, en.body.code, `codes never change: ${show}`);
  const english = texts(en);
  const spanish = texts(es);
  assert.deepEqual([...spanish.keys()].sort(), [...english.keys()].sort(), show);
  assert.ok(english.size > 0, show);
  for (const [where, text] of english) {
    englishSeen.add(text);
    assert.notEqual(spanish.get(where), text, `${where} is not translated: ${show}`);
  }
  for (const [where, text] of spanish) assert.ok(!englishSeen.has(text), `${where} in Spanish is an English text: ${show}`);
  return { en, es };
}
