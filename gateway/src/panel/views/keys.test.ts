// The keys page shows the sending domains a key is limited to, read-only: the panel neither sets nor changes them.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { apiKeyRecord } from '@notify/test/harness/api-key-record.ts';
import { translator } from '../i18n/texts.ts';
import { keysView } from './keys.ts';

test("each key's sending domains are listed, 'any domain' when it has no limit, and no field changes them", () => {
  const options = {
    projectId: 3,
    project: 'web',
    keys: [apiKeyRecord({ id: 1 }), apiKeyRecord({ id: 2, fromDomains: ['mail.example.com', 'news.example.com'] })],
    csrfToken: 'token',
  };
  const page = String(keysView(translator('en'), options));
  assert.match(page, /<th scope="col">Sends From<\/th>/);
  assert.match(page, /<code>messages:read<\/code><\/td>\s*<td>any domain<\/td>/);
  assert.match(page, /<code>messages:read<\/code><\/td>\s*<td><code>mail\.example\.com<\/code>, <code>news\.example\.com<\/code><\/td>/);
  assert.doesNotMatch(page, /name="from_domains"/);
  const spanish = String(keysView(translator('es'), options));
  assert.match(spanish, /<th scope="col">Envía desde<\/th>/);
  assert.match(spanish, /<td>cualquier dominio<\/td>/);
});
