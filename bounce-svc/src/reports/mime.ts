// The little MIME a report needs, read straight from the message's bytes: header blocks, the direct parts of a
// multipart body, and the Content-Transfer-Encoding of the few pieces that are read. Nothing else is decoded: a report
// is a few KiB of machine-readable fields beside a quoted original that may be megabytes, and only the original's
// header block matters. Every read is capped, so one report costs the same little time and memory whatever it holds.

export type Fields = ReadonlyMap<string, string>;

export interface MimePart {
  /** The part's header fields, names lowercased. */
  readonly headers: Fields;
  /** The Content-Type's media type, lowercased (text/plain when absent, RFC 2045). */
  readonly type: string;
  /** The body as it came, Content-Transfer-Encoding not undone: see `decodedBody`. */
  readonly content: Buffer;
}

export interface Entity {
  readonly headers: Fields;
  /** Offset of the body in the entity's bytes. */
  readonly bodyStart: number;
}

/** The direct parts of a multipart body, or why they cannot be told apart (a truncated, garbled or outsized report). */
export type Split = { readonly parts: readonly MimePart[] } | { readonly fault: string };

/** Of a header block only this much is read (real ones are a few KiB): a longer one is cut there. */
export const maxHeaderBytes = 64 * 1024;

const lf = 0x0a;
const cr = 0x0d;
const space = 0x20;
const tab = 0x09;
const dash = 0x2d;
const equals = 0x3d;

/**
 * Field groups of a header-like block: continuation lines unfolded, names lowercased, the first occurrence of a
 * field kept. A line that is neither a field nor a continuation makes the whole block unreadable (undefined) when
 * `malformed` is 'refuse', and is dropped with its continuations when it is 'skip'.
 */
export function fieldGroups(text: string, malformed: 'refuse' | 'skip' = 'refuse'): Fields[] | undefined {
  const groups: Fields[] = [];
  let current = new Map<string, string>();
  // The field continuation lines belong to; undefined after a repeated or dropped field, whose continuations are dropped.
  let last: string | undefined;
  let inField = false;
  for (const line of text.split(/\r?\n/)) {
    if (line.trim() === '') {
      if (current.size > 0) groups.push(current);
      current = new Map();
      inField = false;
      continue;
    }
    if (/^[ \t]/.test(line)) {
      if (!inField && malformed === 'refuse') return undefined;
      if (last !== undefined) current.set(last, `${current.get(last)} ${line.trim()}`);
      continue;
    }
    const match = /^([!-9;-~]+)[ \t]*:(.*)$/.exec(line);
    if (!match) {
      if (malformed === 'refuse') return undefined;
      inField = true;
      last = undefined;
      continue;
    }
    const name = match[1]!.toLowerCase();
    inField = true;
    last = current.has(name) ? undefined : name;
    if (last !== undefined) current.set(last, match[2]!.trim());
  }
  if (current.size > 0) groups.push(current);
  return groups;
}

/** Offset just past the line break at `at` (CRLF or a bare LF), or undefined when there is none there. */
function lineBreakEnd(buffer: Buffer, at: number): number | undefined {
  if (buffer[at] === lf) return at + 1;
  if (buffer[at] === cr && buffer[at + 1] === lf) return at + 2;
  return undefined;
}

/**
 * Where an entity's header block ends: the offset just past its last line, and the offset of the body after the blank
 * line; undefined when no blank line comes within maxHeaderBytes (or at all).
 */
function headerBlockEnd(entity: Buffer): { end: number; bodyStart: number } | undefined {
  // An entity may open with its blank line: no header fields at all.
  const empty = lineBreakEnd(entity, 0);
  if (empty !== undefined) return { end: 0, bodyStart: empty };
  const limit = Math.min(entity.length, maxHeaderBytes);
  for (let newline = entity.indexOf(lf); newline >= 0 && newline < limit; newline = entity.indexOf(lf, newline + 1)) {
    const bodyStart = lineBreakEnd(entity, newline + 1);
    if (bodyStart !== undefined) return { end: newline + 1, bodyStart };
  }
  return undefined;
}

/** An entity's header block as text; without a blank line within maxHeaderBytes, the capped start and no body. */
function headerBlock(entity: Buffer): { text: string; bodyStart: number } {
  const block = headerBlockEnd(entity) ?? { end: Math.min(entity.length, maxHeaderBytes), bodyStart: entity.length };
  return { text: entity.toString('latin1', 0, block.end), bodyStart: block.bodyStart };
}

/** The header fields of an entity (a part, a quoted message); undefined when a line is not a field. */
export function readEntity(entity: Buffer): Entity | undefined {
  const block = headerBlock(entity);
  const groups = fieldGroups(block.text);
  return groups && { headers: groups[0] ?? new Map(), bodyStart: block.bodyStart };
}

/**
 * The header fields of a whole message, read leniently as a general mail reader would: a line that is not a field
 * is dropped, where in a part it makes the part unreadable.
 */
export function readMessageHeader(raw: Buffer): Entity {
  const block = headerBlock(raw);
  return { headers: fieldGroups(block.text, 'skip')?.[0] ?? new Map(), bodyStart: block.bodyStart };
}

/**
 * The `;`-separated pieces of a header value, `;` inside a quoted string kept. A hand-written scan rather than a
 * regular expression: the value comes from anyone, and this stays linear in its length whatever it holds.
 */
function splitOutsideQuotes(value: string): string[] {
  const pieces: string[] = [];
  let start = 0;
  let quoted = false;
  for (let i = 0; i < value.length; i += 1) {
    const char = value[i];
    if (quoted && char === '\\') i += 1;
    else if (char === '"') quoted = !quoted;
    else if (char === ';' && !quoted) {
      pieces.push(value.slice(start, i));
      start = i + 1;
    }
  }
  pieces.push(value.slice(start));
  return pieces;
}

/** A parameter's value: a token as it is, a quoted string without its quotes and backslashes. */
function parameterValue(raw: string): string {
  const value = raw.trim();
  if (!value.startsWith('"')) return value;
  const closing = /^"((?:[^"\\]|\\.)*)"/.exec(value);
  return (closing ? closing[1]! : value.slice(1)).replace(/\\(.)/g, '$1');
}

/** A Content-Type value (RFC 2045 section 5.1): its media type and parameters, lowercased but the values. */
export function parseContentType(value: string | undefined): { type: string; params: Fields } {
  if (value === undefined) return { type: 'text/plain', params: new Map() };
  const [type, ...parameters] = splitOutsideQuotes(value);
  const params = new Map<string, string>();
  for (const parameter of parameters) {
    const equalsAt = parameter.indexOf('=');
    const name = parameter.slice(0, Math.max(0, equalsAt)).trim().toLowerCase();
    if (name !== '' && !params.has(name)) params.set(name, parameterValue(parameter.slice(equalsAt + 1)));
  }
  return { type: type!.trim().toLowerCase(), params };
}

function readPart(part: Buffer): MimePart | undefined {
  const entity = readEntity(part);
  if (!entity) return undefined;
  return { headers: entity.headers, type: parseContentType(entity.headers.get('content-type')).type, content: part.subarray(entity.bodyStart) };
}

/** Offset just past a delimiter line that starts at `at` ("--boundary" already matched there), and whether it closes. */
function delimiterLineEnd(body: Buffer, at: number, delimiterLength: number): { end: number; closing: boolean } | undefined {
  let cursor = at + delimiterLength;
  const closing = body[cursor] === dash && body[cursor + 1] === dash;
  if (closing) cursor += 2;
  while (body[cursor] === space || body[cursor] === tab) cursor += 1;
  const end = cursor === body.length ? cursor : lineBreakEnd(body, cursor);
  return end === undefined ? undefined : { end, closing };
}

/** indexOf of "\n--boundary" → the offset of the "--" (where the delimiter's line starts), or -1. */
function lineStartOf(index: number): number {
  return index < 0 ? -1 : index + 1;
}

/**
 * The direct parts of a multipart body (RFC 2046 section 5.1.1). Lines that start with the boundary are found with
 * Buffer.indexOf, and every one counts against `maxParts`: past it the split stops, so neither a million parts nor a
 * body full of near-delimiters costs more than a few of them.
 */
export function multipartParts(body: Buffer, boundary: string, maxParts: number): Split {
  const delimiter = Buffer.from(`--${boundary}`, 'latin1');
  // A delimiter is always at the start of a line: the body's first, or one after a line break.
  const lineDelimiter = Buffer.from(`\n--${boundary}`, 'latin1');
  const parts: MimePart[] = [];
  let delimiterLines = 0;
  let partStart: number | undefined;
  const first = body.subarray(0, delimiter.length).equals(delimiter) ? 0 : lineStartOf(body.indexOf(lineDelimiter));
  for (let at = first; at >= 0; at = lineStartOf(body.indexOf(lineDelimiter, at))) {
    delimiterLines += 1;
    if (delimiterLines > maxParts + 1) return { fault: `more than ${maxParts} parts` };
    const line = delimiterLineEnd(body, at, delimiter.length);
    if (!line) continue;
    if (partStart !== undefined) {
      // The line break before a delimiter belongs to the delimiter (RFC 2046), not to the part's content.
      const contentEnd = Math.max(partStart, body[at - 2] === cr ? at - 2 : at - 1);
      const part = readPart(body.subarray(partStart, contentEnd));
      if (!part) return { fault: "a part's header cannot be read" };
      parts.push(part);
    }
    if (line.closing) return parts.length > 0 ? { parts } : { fault: 'no part' };
    partStart = line.end;
  }
  return { fault: partStart === undefined ? 'the boundary never opens a part' : 'the closing delimiter is missing' };
}

/** 0-15 for an ASCII hex digit, -1 otherwise. */
function hexValue(byte: number | undefined): number {
  if (byte === undefined) return -1;
  if (byte >= 0x30 && byte <= 0x39) return byte - 0x30;
  const lower = byte | 0x20;
  return lower >= 0x61 && lower <= 0x66 ? lower - 0x61 + 10 : -1;
}

/** Quoted-printable (RFC 2045 section 6.7) undone into a buffer no longer than the input, in one pass. */
export function decodeQuotedPrintable(input: Buffer): Buffer {
  const output = Buffer.allocUnsafe(input.length);
  let length = 0;
  for (let i = 0; i < input.length; i += 1) {
    const byte = input[i]!;
    if (byte !== equals) {
      output[length++] = byte;
      continue;
    }
    const softBreakEnd = lineBreakEnd(input, i + 1);
    if (softBreakEnd !== undefined) {
      i = softBreakEnd - 1;
      continue;
    }
    const high = hexValue(input[i + 1]);
    const low = hexValue(input[i + 2]);
    if (high < 0 || low < 0) {
      // Not an escape: kept as it came, as RFC 2045 asks of a robust decoder.
      output[length++] = byte;
      continue;
    }
    output[length++] = high * 16 + low;
    i += 2;
  }
  return output.subarray(0, length);
}

/** The part's content with its Content-Transfer-Encoding undone, of at most `limit` encoded bytes from its start. */
export function decodedBody(part: MimePart, limit: number): Buffer {
  const content = part.content.subarray(0, limit);
  const encoding = (part.headers.get('content-transfer-encoding') ?? '7bit').trim().toLowerCase();
  // Node's base64 decoder skips line breaks and characters outside the alphabet, as RFC 2045 section 6.8 asks.
  if (encoding === 'base64') return Buffer.from(content.toString('latin1'), 'base64');
  if (encoding === 'quoted-printable') return decodeQuotedPrintable(content);
  return content;
}

function decodeWord(charset: string, encoding: string, text: string): string | undefined {
  const bytes = encoding.toLowerCase() === 'b' ? Buffer.from(text, 'base64') : decodeQuotedPrintable(Buffer.from(text.replace(/_/g, ' '), 'latin1'));
  try {
    // A language suffix (RFC 2231 section 5: `utf-8*en`) is not part of the charset's name.
    return new TextDecoder(charset.split('*')[0]).decode(bytes);
  } catch {
    return undefined;
  }
}

/** A header value with its RFC 2047 encoded-words decoded; a word in a charset this runtime lacks is left as it came. */
export function decodeEncodedWords(value: string): string {
  const word = /=\?([^?\s]+)\?([BbQq])\?([^?\s]*)\?=/g;
  // Whitespace between two encoded-words is not part of the text (RFC 2047 section 6.2).
  const joined = value.replace(/(=\?[^?\s]+\?[BbQq]\?[^?\s]*\?=)\s+(?==\?[^?\s]+\?[BbQq]\?[^?\s]*\?=)/g, '$1');
  return joined.replace(word, (whole, charset: string, encoding: string, text: string) => decodeWord(charset, encoding, text) ?? whole);
}
