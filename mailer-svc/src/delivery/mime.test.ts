// The mail composer read back by mailparser, an independent MIME parser: headers and bodies come back as given, in
// every encoding the composer picks, lines stay within RFC 5322's limits and end in CRLF, and a header value cannot
// start another header.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { simpleParser } from 'mailparser';
import { asciiAddress, composeMail, type MailParts } from './mime.ts';

const base: MailParts = {
  from: { name: 'Notify', address: 'no-reply@notify.example' },
  to: 'ana@example.org',
  subject: 'Hello Ana',
  text: 'Hello Ana, your code is N-1843.',
  html: '<p>Hello Ana, your code is <b>N-1843</b>.</p>',
  messageId: '<42@notify.example>',
  headers: { 'X-Notify-Message-Id': '42' },
  date: new Date('2026-12-07T23:15:09Z'),
};

/** Every line ends in CRLF and none is longer than RFC 5322's 998 characters (78 for the headers written here). */
function assertLines(bytes: Buffer): void {
  const raw = bytes.toString('latin1');
  assert.ok(!/[^\r]\n|\r[^\n]/.test(raw), 'CRLF line ends only');
  const [headers = '', body = ''] = raw.split('\r\n\r\n', 2);
  for (const line of headers.split('\r\n')) assert.ok(line.length <= 78, `header line of ${line.length}: ${line}`);
  for (const line of body.split('\r\n')) assert.ok(line.length <= 998);
}

test('a plain ASCII mail: multipart/alternative with both bodies in 7bit, the headers as given', async () => {
  const bytes = composeMail(base);
  assertLines(bytes);
  const raw = bytes.toString();
  assert.match(raw, /^From: Notify <no-reply@notify\.example>\r\nTo: ana@example\.org\r\nSubject: Hello Ana\r\nMessage-ID: <42@notify\.example>\r\n/);
  assert.match(raw, /\r\nDate: Mon, 07 Dec 2026 23:15:09 \+0000\r\n/);
  assert.match(raw, /\r\nContent-Transfer-Encoding: 7bit\r\n/);
  const parsed = await simpleParser(bytes);
  assert.equal(parsed.subject, 'Hello Ana');
  assert.equal(parsed.messageId, '<42@notify.example>');
  assert.equal(parsed.date?.toISOString(), '2026-12-07T23:15:09.000Z');
  assert.deepEqual(parsed.from?.value, [{ name: 'Notify', address: 'no-reply@notify.example' }]);
  assert.equal(parsed.text?.trim(), base.text);
  assert.equal(parsed.html, base.html);
  assert.equal(parsed.headers.get('x-notify-message-id'), '42');
  assert.equal(parsed.headers.get('mime-version'), '1.0');
});

test('non-ASCII text, names and subjects, long lines and line breaks survive the trip, encoded', async () => {
  const text = `Olá Ana 👋, ça va?\nLinha dois\r\n${'x'.repeat(300)}\n.leading dot`;
  const html = `<p>${'Olá '.repeat(60)}</p>`;
  const subject = `Olá Ana, ${'um assunto bem longo '.repeat(6)}✓`;
  const bytes = composeMail({ ...base, subject, text, html, from: { name: 'Loja Ção, Ltda.', address: 'billing@Loja.Example' }, to: 'josé@bücher.example' });
  assertLines(bytes);
  assert.match(bytes.toString(), /Content-Transfer-Encoding: quoted-printable/);
  const parsed = await simpleParser(bytes);
  assert.equal(parsed.subject, subject);
  assert.deepEqual(parsed.from?.value, [{ name: 'Loja Ção, Ltda.', address: 'billing@loja.example' }]);
  assert.match(bytes.toString(), /\r\nTo: josé@xn--bcher-kva\.example\r\n/);
  assert.equal((parsed.to as { text: string }).text, 'josé@bücher.example');
  assert.equal(parsed.text?.replace(/\n$/, ''), text.replace(/\r\n/g, '\n'));
  assert.equal(parsed.html, html);
});

test('display names are bare, quoted or encoded as they need; an address gets its domain in lower-case ASCII', async () => {
  for (const [name, written] of [
    ['Notify Team', 'Notify Team <a@b.example>'],
    ['Shop "Billing", Inc.', '"Shop \\"Billing\\", Inc." <a@b.example>'],
    ['', 'a@b.example'],
  ] as const) {
    const raw = composeMail({ ...base, from: { name, address: 'a@b.example' } }).toString();
    assert.ok(raw.startsWith(`From: ${written}\r\n`), raw.split('\r\n')[0]);
    assert.deepEqual((await simpleParser(Buffer.from(raw))).from?.value, [{ name, address: 'a@b.example' }]);
  }
  assert.equal(asciiAddress('Ana@Bücher.Example'), 'Ana@xn--bcher-kva.example');
  assert.equal(asciiAddress('not-an-address'), 'not-an-address');
});

test('a subject with a line break cannot start a header of its own', async () => {
  const bytes = composeMail({ ...base, subject: 'Hi\r\nBcc: victim@example.org' });
  assert.ok(!/\r\nBcc:/i.test(bytes.toString()));
  const parsed = await simpleParser(bytes);
  assert.equal(parsed.headers.has('bcc'), false);
  assert.equal(parsed.subject, 'Hi\r\nBcc: victim@example.org');
});

test('a mail with one body is that part alone, and with none an empty text part', async () => {
  const htmlOnly = composeMail({ ...base, text: '' });
  assert.match(htmlOnly.toString(), /\r\nContent-Type: text\/html; charset=utf-8\r\n/);
  assert.doesNotMatch(htmlOnly.toString(), /multipart/);
  assert.equal((await simpleParser(htmlOnly)).html, base.html);
  const textOnly = composeMail({ ...base, html: '' });
  assert.equal((await simpleParser(textOnly)).text?.trim(), base.text);
  const empty = await simpleParser(composeMail({ ...base, html: '', text: '' }));
  assert.equal(empty.text ?? '', '');
  assert.equal(empty.subject, 'Hello Ana');
});

test('long header values are folded, and read back whole', async () => {
  const unsubscribe = `<https://notify.example/u/${'t'.repeat(120)}>, <mailto:unsubscribe@bounces.notify.example?subject=unsubscribe%20${'t'.repeat(120)}>`;
  const bytes = composeMail({ ...base, headers: { 'List-Unsubscribe': unsubscribe, 'List-Unsubscribe-Post': 'List-Unsubscribe=One-Click' } });
  const parsed = await simpleParser(bytes);
  assert.equal(
    parsed.headerLines
      .find((line) => line.key === 'list-unsubscribe')
      ?.line.replace(/\r\n[ \t]/g, ' ')
      .replace(/^List-Unsubscribe: /, ''),
    unsubscribe,
  );
  assert.equal(parsed.headerLines.find((line) => line.key === 'list-unsubscribe-post')?.line, 'List-Unsubscribe-Post: List-Unsubscribe=One-Click');
});
