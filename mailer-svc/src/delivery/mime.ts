// The bytes of a rendered mail as the relay gets them (RFC 5322 and MIME), built in one pass: headers, then the text
// and HTML bodies as multipart/alternative (or the one that is not empty alone). Header text outside printable ASCII is
// written as RFC 2047 encoded words, bodies as 7bit when they are short-lined ASCII and as quoted-printable otherwise,
// every line ended with CRLF and headers folded at 76 characters. nodemailer's own encoders do the encoding; what it
// would add around them (a MIME tree of streams per message) is the cost this saves.
import { randomBytes } from 'node:crypto';
import { domainToASCII } from 'node:url';
import { encodeWords as encodeSomeWords, encodeWord, foldLines, hasLongerLines } from 'nodemailer/lib/mime-funcs';
import { encode as quotedPrintable, wrap } from 'nodemailer/lib/qp';

export interface Mailbox {
  /** '' for none. */
  readonly name: string;
  readonly address: string;
}

export interface MailParts {
  readonly from: Mailbox;
  readonly to: string;
  readonly subject: string;
  readonly text: string;
  readonly html: string;
  /** With its angle brackets. */
  readonly messageId: string;
  /** Further header fields, by name; values in printable ASCII. */
  readonly headers: Readonly<Record<string, string>>;
  /** The Date header's moment; now unless given. */
  readonly date?: Date;
}

const crlf = '\r\n';
/** nodemailer's encodeWords, with the `encodeAll` argument its types leave out. */
const encodeWords = encodeSomeWords as (value: string, encoding: 'Q' | 'B', maxLength: number, encodeAll: boolean) => string;
const printable = /^[\x20-\x7e]*$/;

/** An addr-spec with its domain in lower-case ASCII (IDNA), as the headers and the envelope carry it. */
export function asciiAddress(address: string): string {
  const at = address.lastIndexOf('@');
  if (at < 0) return address;
  const domain = address.slice(at + 1);
  return `${address.slice(0, at)}@${domainToASCII(domain) || domain.toLowerCase()}`;
}

/** A display name: bare when it is words and spaces, quoted when it is other printable ASCII, else encoded words. */
function displayName(name: string): string {
  if (/^[\w ]*$/.test(name)) return name;
  if (printable.test(name)) return `"${name.replace(/["\\]/g, '\\$&')}"`;
  return encodeWord(name, 'Q', 52);
}

function mailbox({ name, address }: Mailbox): string {
  return name === '' ? asciiAddress(address) : `${displayName(name)} <${asciiAddress(address)}>`;
}

/**
 * An unstructured header value (Subject): as it is when printable ASCII; a value with a control character (a line
 * break included, which would end the header) is one encoded word; any other as encoded words, all of it, as some
 * clients drop the spaces around a lone encoded word.
 */
function unstructured(value: string): string {
  if (/^[\x20-\x7e\t]*$/.test(value)) return value;
  return /[\x00-\x08\x0a-\x1f\x7f]/.test(value) ? encodeWord(value, 'Q', 52) : encodeWords(value, 'Q', 52, true);
}

/** RFC 5322 date-time in UTC: `Mon, 07 Dec 2026 23:15:09 +0000`. */
const dateTime = (date: Date): string => date.toUTCString().replace(/GMT$/, '+0000');

const header = (name: string, value: string): string => foldLines(`${name}: ${value}`, 76) + crlf;

/** One body part: its Content-Type and Content-Transfer-Encoding headers, an empty line, and the encoded body. */
function part(type: 'text/plain' | 'text/html', body: string): string {
  const lines = body.replace(/\r\n|\r|\n/g, crlf);
  const plain = /^[\x20-\x7e\t\r\n]*$/.test(lines) && !hasLongerLines(lines, 76);
  const encoded = plain ? lines : wrap(quotedPrintable(lines), 76);
  return `Content-Type: ${type}; charset=utf-8${crlf}Content-Transfer-Encoding: ${plain ? '7bit' : 'quoted-printable'}${crlf}${crlf}${encoded}`;
}

/** The message's bytes: CRLF line ends, headers then an empty line then the body. */
export function composeMail(mail: MailParts): Buffer {
  const headers = [
    header('From', mailbox(mail.from)),
    header('To', asciiAddress(mail.to)),
    header('Subject', unstructured(mail.subject)),
    header('Message-ID', mail.messageId),
    header('Date', dateTime(mail.date ?? new Date())),
    ...Object.entries(mail.headers).map(([name, value]) => header(name, value)),
    header('MIME-Version', '1.0'),
  ];
  const bodies = [part('text/plain', mail.text), part('text/html', mail.html)].filter((_, index) => (index === 0 ? mail.text : mail.html) !== '');
  let body: string;
  if (bodies.length === 2) {
    const boundary = `--_NotifyPart_${randomBytes(12).toString('hex')}`;
    headers.push(header('Content-Type', `multipart/alternative; boundary="${boundary}"`));
    body = `--${boundary}${crlf}${bodies.join(`${crlf}--${boundary}${crlf}`)}${crlf}--${boundary}--${crlf}`;
  } else {
    const only = bodies[0] ?? part('text/plain', '');
    const split = only.indexOf(crlf + crlf);
    headers.push(only.slice(0, split + 2));
    body = only.slice(split + 4);
  }
  return Buffer.from(`${headers.join('')}${crlf}${body}`, 'utf8');
}
