// Accept-Language negotiation (RFC 9110 §12.5.4) between the languages the gateway speaks.
import { defaultLanguage, type Language, languages } from './messages.ts';

interface Preference {
  range: string;
  q: number;
  position: number;
}

const qValue = /^(?:0(?:\.\d{0,3})?|1(?:\.0{0,3})?)$/;

function preferences(header: string): Preference[] {
  const parsed: Preference[] = [];
  header.split(',').forEach((item, position) => {
    const [rawRange = '', ...parameters] = item.split(';');
    const range = rawRange.trim().toLowerCase();
    if (!/^(?:\*|[a-z]{1,8}(?:-[a-z0-9]{1,8})*)$/.test(range)) return;
    let q = 1;
    for (const parameter of parameters) {
      const [name = '', value = ''] = parameter.split('=').map((part) => part.trim());
      if (name.toLowerCase() !== 'q') continue;
      // A malformed weight makes the whole item unusable rather than silently preferred.
      if (!qValue.test(value)) return;
      q = Number(value);
    }
    parsed.push({ range, q, position });
  });
  return parsed;
}

/** How well `range` names `language`: exact beats a sub-tag of it (`es-MX` for `es`), which beats `*`. */
function specificity(range: string, language: Language): number {
  if (range === language) return 3;
  if (range.startsWith(`${language}-`)) return 2;
  if (range === '*') return 1;
  return 0;
}

/**
 * The language to answer in: the supported one the caller weights highest (the most specific range naming it decides
 * its weight), earlier in the header on a tie; English when the header is absent or names nothing we speak.
 */
export function negotiateLanguage(header: string | undefined): Language {
  if (!header) return defaultLanguage;
  const items = preferences(header);
  let best: { language: Language; q: number; position: number } | undefined;
  for (const language of languages) {
    let chosen: Preference | undefined;
    let chosenSpecificity = 0;
    for (const item of items) {
      const itemSpecificity = specificity(item.range, language);
      if (itemSpecificity === 0) continue;
      if (itemSpecificity > chosenSpecificity || (itemSpecificity === chosenSpecificity && chosen && item.q > chosen.q)) {
        chosen = item;
        chosenSpecificity = itemSpecificity;
      }
    }
    if (!chosen || chosen.q === 0) continue;
    if (!best || chosen.q > best.q || (chosen.q === best.q && chosen.position < best.position)) {
      best = { language, q: chosen.q, position: chosen.position };
    }
  }
  return best?.language ?? defaultLanguage;
}
