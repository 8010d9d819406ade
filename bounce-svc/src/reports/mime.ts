// The little MIME a report needs beyond mailparser: mailparser folds message/delivery-status and
// message/feedback-report parts into the body text, so the parts of a multipart/report are split here, and their
// machine-readable fields (RFC 3464 section 2.1, RFC 5965 section 3.1: header-like "Name: value" lines, groups
// separated by blank lines) are read as field groups.

export type Fields = ReadonlyMap<string, string>;

export interface MimePart {
  /** The part's header fields, names lowercased. */
  readonly headers: Fields;
  /** The Content-Type's media type, lowercased (text/plain when absent, RFC 2045). */
  readonly type: string;
  /** The body with its Content-Transfer-Encoding undone, as text. */
  readonly body: string;
}

/**
 * Field groups of a header-like block: continuation lines unfolded, names lowercased, the first occurrence of a
 * field kept. Returns undefined when a line is neither a field nor a continuation (not such a block at all).
 */
export function fieldGroups(text: string): Fields[] | undefined {
  const groups: Fields[] = [];
  let current = new Map<string, string>();
  // The field continuation lines belong to; undefined after a repeated field, whose value (and continuations) is dropped.
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
      if (!inField) return undefined;
      if (last !== undefined) current.set(last, `${current.get(last)} ${line.trim()}`);
      continue;
    }
    const match = /^([!-9;-~]+)[ \t]*:(.*)$/.exec(line);
    if (!match) return undefined;
    const name = match[1]!.toLowerCase();
    inField = true;
    last = current.has(name) ? undefined : name;
    if (last !== undefined) current.set(last, match[2]!.trim());
  }
  if (current.size > 0) groups.push(current);
  return groups;
}

/** The header block of a message or part (up to the first blank line) as fields. */
export function headerFields(text: string): Fields | undefined {
  const end = /\r?\n\r?\n/.exec(text);
  const block = end ? text.slice(0, end.index) : text;
  const groups = fieldGroups(block);
  return groups && (groups[0] ?? new Map());
}

function decodeQuotedPrintable(text: string): Buffer {
  const bytes: number[] = [];
  const unfolded = text.replace(/=\r?\n/g, '');
  for (let i = 0; i < unfolded.length; i += 1) {
    const hex = unfolded[i] === '=' ? /^[0-9A-Fa-f]{2}/.exec(unfolded.slice(i + 1, i + 3)) : null;
    if (hex) {
      bytes.push(parseInt(hex[0], 16));
      i += 2;
    } else bytes.push(...Buffer.from(unfolded[i]!, 'latin1'));
  }
  return Buffer.from(bytes);
}

function decodeBody(body: string, encoding: string | undefined): string {
  const name = (encoding ?? '7bit').trim().toLowerCase();
  if (name === 'base64') return Buffer.from(body.replace(/[^A-Za-z0-9+/=]/g, ''), 'base64').toString('utf8');
  if (name === 'quoted-printable') return decodeQuotedPrintable(body).toString('utf8');
  return body;
}

function mediaType(contentType: string | undefined): string {
  return (contentType ?? 'text/plain').split(';')[0]!.trim().toLowerCase();
}

/**
 * The direct parts of a multipart body (`raw` is the whole message, latin1 so bytes survive), or undefined when the
 * boundary never opens a part or the closing delimiter is missing (a truncated or garbled report).
 */
export function multipartParts(raw: string, boundary: string): MimePart[] | undefined {
  const headerEnd = /\r?\n\r?\n/.exec(raw);
  if (!headerEnd) return undefined;
  const body = raw.slice(headerEnd.index + headerEnd[0].length);
  const delimiter = new RegExp(`(?:^|\\r?\\n)--${boundary.replace(/[.*+?^${}()|[\]\\/]/g, '\\$&')}(--)?[ \\t]*(?=\\r?\\n|$)`, 'g');
  const parts: MimePart[] = [];
  let start: number | undefined;
  let closed = false;
  for (const match of body.matchAll(delimiter)) {
    if (start !== undefined) {
      const text = body.slice(start, match.index).replace(/^\r?\n/, '');
      // A part may open with its blank line at once: no header fields, all defaults (text/plain, 7bit).
      const bodyStart = /^\r?\n/.exec(text) ?? /\r?\n\r?\n/.exec(text);
      const headers = bodyStart?.index === 0 ? new Map<string, string>() : headerFields(text);
      if (!headers) return undefined;
      const content = bodyStart ? text.slice(bodyStart.index + bodyStart[0].length) : '';
      parts.push({ headers, type: mediaType(headers.get('content-type')), body: decodeBody(content, headers.get('content-transfer-encoding')) });
    }
    if (match[1] === '--') {
      closed = true;
      break;
    }
    start = match.index + match[0].length;
  }
  return closed && parts.length > 0 ? parts : undefined;
}
