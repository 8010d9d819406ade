// Reading reports as mail servers write them (encodings, line ends, folded and quoted fields), and refusing the ones
// that would cost more than a report should: too many parts, an outsized machine-readable part.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { arf, dsn } from '@notify/test/harness/report-samples.ts';
import { decodeQuotedPrintable } from './mime.ts';
import { MalformedReportError, maxReportParts, readReport, readUnsubscribeRequest } from './report.ts';

const returnPath = 'bounces+token@bounces.example.test';
const boundary = '--RAA14128.773615765/CS.UTK.EDU';
const statusFields =
  'Reporting-MTA: dns; cs.utk.edu\r\n\r\nFinal-Recipient: rfc822;louisl@larry.slip.umd.edu\r\nAction: failed\r\nStatus: 5.1.1\r\nDiagnostic-Code: smtp; 550 5.1.1 user=unknown\r\n';

/** The sample DSN with its delivery-status part's fields replaced by `fields`, sent with `encoding`. */
function dsnWithStatus(encoding: string, fields: string): Buffer {
  const sample = dsn(returnPath, { action: 'failed', status: '5.1.1' });
  const start = sample.indexOf('content-type: message/delivery-status');
  const end = sample.indexOf(`\r\n${boundary}`, start);
  return Buffer.from(
    `${sample.slice(0, start)}content-type: message/delivery-status\r\nContent-Transfer-Encoding: ${encoding}\r\n\r\n${fields}${sample.slice(end)}`,
  );
}

function refusal(raw: Buffer): string {
  try {
    readReport(raw);
  } catch (error) {
    assert.ok(error instanceof MalformedReportError);
    return error.message;
  }
  return assert.fail('the report was read');
}

describe('reading a report', () => {
  test('a delivery-status part in quoted-printable or base64 reads as the plain one does', () => {
    const plain = readReport(dsnWithStatus('7bit', statusFields));
    assert.deepEqual(plain, { kind: 'dsn', effect: 'bounce', suppression: 'hard_bounce', detail: '5.1.1 550 5.1.1 user=unknown', smtpCode: 550, returnPath });
    const quoted = statusFields.replace('user=unknown', 'user=3Dunkn=\r\nown').replace('Action: failed', 'Action: f=61iled');
    assert.deepEqual(readReport(dsnWithStatus('quoted-printable', quoted)), plain);
    const base64 = Buffer.from(statusFields).toString('base64').replace(/.{76}/g, '$&\r\n');
    assert.deepEqual(readReport(dsnWithStatus('base64', base64)), plain);
  });

  test('quoted-printable is undone byte for byte: soft line breaks, either case of hex, and a stray = kept', () => {
    const decoded = decodeQuotedPrintable(Buffer.from('caf=C3=a9 =\r\nau lait=\n 100=25 =ZZ=3'));
    assert.equal(decoded.toString('utf8'), 'café au lait 100% =ZZ=3');
  });

  test('bare LF line ends, a folded Content-Type and a spaced, quoted boundary are read', () => {
    const sample = arf(returnPath)
      .replace('boundary="part1_13d.2e68ed54_boundary"', 'boundary = "part1_13d.2e68ed54_boundary"; charset="x;y"')
      .replace(/\r\n/g, '\n');
    assert.deepEqual(readReport(Buffer.from(sample)), { kind: 'arf', effect: 'complaint', detail: 'abuse (SomeGenerator/1.0)', returnPath });
  });

  test("the original's Return-Path is read from the start of a 10 MB original, in base64 too", () => {
    const original = `Return-Path: <${returnPath}>\r\nSubject: Hello\r\n\r\n${'Hello, Louis.\r\n'.repeat(700_000)}`;
    const large = dsn('someone@example.org', { action: 'failed', status: '5.1.1' }).replace(
      /Return-Path: [\s\S]*(?=\r\n--RAA14128\.773615765\/CS\.UTK\.EDU--)/,
      original,
    );
    assert.equal(readReport(Buffer.from(large)).returnPath, returnPath);
    const encoded = large
      .replace('content-type: message/rfc822', 'content-type: text/rfc822-headers\r\nContent-Transfer-Encoding: base64')
      .replace(original, Buffer.from(original).toString('base64').replace(/.{76}/g, '$&\r\n'));
    assert.equal(readReport(Buffer.from(encoded)).returnPath, returnPath);
  });

  test(`a report of more than ${maxReportParts} parts, or full of lines that start like its boundary, is refused`, () => {
    const header = 'Content-Type: multipart/report; report-type=delivery-status; boundary="b"\r\n\r\n';
    const statusPart = `--b\r\nContent-Type: message/delivery-status\r\n\r\n${statusFields}`;
    const parts = (count: number) => Buffer.from(`${header}${'--b\r\n\r\ntext\r\n'.repeat(count - 1)}${statusPart}--b--\r\n`);
    assert.equal(readReport(parts(maxReportParts)).kind, 'dsn');
    assert.match(refusal(parts(maxReportParts + 1)), /more than 100 parts/);
    assert.match(refusal(Buffer.from(`${header}${statusPart}${'--bogus\r\n'.repeat(1_000)}--b--\r\n`)), /more than 100 parts/);
  });

  test('a machine-readable part over 64 KiB is refused unread', () => {
    const padded = statusFields.replace('Reporting-MTA: dns; cs.utk.edu\r\n', `Reporting-MTA: dns; cs.utk.edu\r\n${'X-Padding: x\r\n'.repeat(5_000)}`);
    assert.match(refusal(dsnWithStatus('7bit', padded)), /part is over 65536 bytes/);
  });

  test('a truncated report and a report-type not read here are refused', () => {
    const sample = dsn(returnPath, { action: 'failed', status: '5.1.1' });
    assert.match(refusal(Buffer.from(sample.replace(`${boundary}--`, ''))), /closing delimiter is missing/);
    assert.match(refusal(Buffer.from(sample.replace('report-type=delivery-status', 'report-type=constructor'))), /report-type other than/);
  });

  test('an unsubscribe Subject is read folded or in RFC 2047 encoded-words', () => {
    const token = `AbC_d-${'x'.repeat(100)}`;
    const request = (subject: string) => Buffer.from(`From: a@example.com\r\nSubject: ${subject}\r\n\r\n`);
    assert.equal(readUnsubscribeRequest(request(`unsubscribe\r\n ${token}`)), token);
    // In a Q word `_` is a space, and a `_` of the text is written =5F.
    const encoded = `=?UTF-8?Q?unsubscribe_${token.slice(0, 50).replace(/_/g, '=5F')}?=\r\n =?utf-8?B?${Buffer.from(token.slice(50)).toString('base64')}?=`;
    assert.equal(readUnsubscribeRequest(request(encoded)), token);
    assert.equal(readUnsubscribeRequest(request('=?x-unknown-charset?Q?unsubscribe_abc?=')), undefined);
  });
});
