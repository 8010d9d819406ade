// The DKIM signer against mailauth, an independent verifier: signatures over messages whose bodies and headers need
// each rule of relaxed canonicalization verify against the published key, and any change to a signed byte fails them.
import assert from 'node:assert/strict';
import { generateKeyPairSync } from 'node:crypto';
import { test } from 'node:test';
import { dkimVerify } from 'mailauth/lib/dkim/verify.js';
import { relaxedBody, signMessage } from './dkim-sign.ts';

const pair = generateKeyPairSync('rsa', { modulusLength: 2048 });
const key = { domainName: 'shop.example', keySelector: 'notify', privateKey: pair.privateKey };
const record = `v=DKIM1; k=rsa; p=${pair.publicKey.export({ type: 'spki', format: 'der' }).toString('base64')}`;
const resolver = async (name: string, type: string): Promise<string[][]> => {
  if (name === 'notify._domainkey.shop.example' && type === 'TXT') return [[record]];
  throw Object.assign(new Error(`no ${type} record for ${name}`), { code: 'ENOTFOUND' });
};
const fields = ['From', 'To', 'Subject', 'Date', 'Message-ID', 'MIME-Version', 'Content-Type', 'List-Unsubscribe', 'List-Unsubscribe-Post'];

const message = (headers: string, body: string): Buffer => Buffer.from(`${headers.replace(/\n/g, '\r\n')}\r\n\r\n${body.replace(/\n/g, '\r\n')}`, 'latin1');

async function verify(signed: Buffer): Promise<{ result: string; signedHeaders: string }> {
  const { results } = await dkimVerify(signed, { resolver });
  assert.equal(results.length, 1);
  const [result] = results;
  return { result: String(result?.status.result), signedHeaders: String(result?.signingHeaders?.keys) };
}

const headers = `From: Shop <news@shop.example>
To: ana@example.org
Subject: =?UTF-8?Q?Ol=C3=A1?=   Ana
Date: Mon, 07 Dec 2026 23:15:09 +0000
Message-ID: <42@shop.example>
X-Notify-Message-Id: 42
List-Unsubscribe: <https://notify.example.net/u/abc>,
\t<mailto:unsubscribe@bounces.example.net?subject=unsubscribe%20abc>
List-Unsubscribe-Post: List-Unsubscribe=One-Click
MIME-Version: 1.0
Content-Type: multipart/alternative;
 boundary="b1"`;

test('a message whose body and headers need every rule of relaxed canonicalization verifies, over the listed fields it has', async () => {
  const body = '--b1\nContent-Type: text/plain\n\nHi  Ana,\t \nsee   you \n--b1--\n\n\n';
  const signed = await signMessage(message(headers, body), key, fields);
  assert.match(signed.toString('latin1'), /^DKIM-Signature: v=1; a=rsa-sha256; c=relaxed\/relaxed; d=shop\.example; s=notify;\r\n/);
  assert.ok(
    signed
      .toString('latin1')
      .split('\r\n\r\n')[0]
      ?.split('\r\n')
      .every((line) => line.length <= 998),
    'every header line is within RFC 5322 limits',
  );
  const { result, signedHeaders } = await verify(signed);
  assert.equal(result, 'pass');
  // Cc and the other listed fields the message lacks are not claimed; the X- field is not signed.
  assert.equal(signedHeaders, 'From: To: Subject: Date: Message-ID: MIME-Version: Content-Type: List-Unsubscribe: List-Unsubscribe-Post');
});

test('changing a signed header or the body after signing fails verification; whitespace relaxed canonicalization ignores does not', async () => {
  const signed = (await signMessage(message(headers, 'Hi Ana\n'), key, fields)).toString('latin1');
  // mailauth reports a signature that does not match as `fail`, a body hash that does not as `neutral`.
  assert.equal((await verify(Buffer.from(signed.replace('Subject: =?UTF-8?Q?Ol=C3=A1?=   Ana', 'Subject: Hola Ana'), 'latin1'))).result, 'fail');
  assert.equal((await verify(Buffer.from(signed.replace(/Hi Ana\r\n$/, 'Hi Bob\r\n'), 'latin1'))).result, 'neutral');
  assert.equal((await verify(Buffer.from(signed.replace(/Hi Ana\r\n$/, 'Hi   Ana \r\n\r\n'), 'latin1'))).result, 'pass');
});

test('relaxed body canonicalization: WSP runs become one space, line-end WSP and trailing empty lines go, and an empty body stays empty', () => {
  assert.equal(relaxedBody('a  b\t\tc \r\n\r\n\r\n'), 'a b c\r\n');
  assert.equal(relaxedBody('last line without CRLF'), 'last line without CRLF\r\n');
  assert.equal(relaxedBody('\r\n\r\n'), '');
  assert.equal(relaxedBody(''), '');
});

test('a message with no end to its header is refused rather than signed wrongly', async () => {
  await assert.rejects(() => signMessage(Buffer.from('From: a@shop.example\r\n'), key, fields), /no end to its header/);
});
