// HTTP requests that fetch() cannot make: header values fetch would refuse or rewrite (latin-1 bytes, no Content-Type at
// all), raw body bytes, a request whose body is never sent (to see whether the answer comes before it), and bytes that
// are not a well-formed request at all.
import { type Agent, request } from 'node:http';
import { connect } from 'node:net';
import type { HttpResult } from './system.ts';

export interface RawRequest {
  method?: string;
  path: string;
  /** Sent as given, in this order; values are written as latin-1 bytes. */
  headers?: ReadonlyArray<readonly [string, string]>;
  body?: Uint8Array;
  /** Declare the headers and flush them, but never send a body byte (Content-Length should then be given). */
  withholdBody?: boolean;
  agent?: Agent;
  timeoutMs?: number;
}

export interface RawResult extends HttpResult {
  /** Time from sending the request to the end of the response. */
  readonly elapsedMs: number;
}

function toHeaders(raw: readonly string[]): Headers {
  const headers = new Headers();
  for (let index = 0; index + 1 < raw.length; index += 2) headers.append(raw[index] as string, raw[index + 1] as string);
  return headers;
}

/**
 * The caller's headers as a flat list (exact names, order and duplicates kept), plus Host and, for a body sent whole,
 * Content-Length when the caller did not give them: Node adds neither to a list, and would stream the body chunked.
 */
function headerList(url: URL, options: RawRequest): string[] {
  const given = options.headers ?? [];
  const has = (name: string): boolean => given.some(([header]) => header.toLowerCase() === name);
  const added: Array<readonly [string, string]> = [];
  if (!has('host')) added.push(['Host', url.host]);
  if (!options.withholdBody && !has('content-length') && !has('transfer-encoding')) added.push(['Content-Length', String(options.body?.length ?? 0)]);
  return [...added, ...given].flat();
}

export function rawRequest(baseUrl: string, options: RawRequest): Promise<RawResult> {
  const url = new URL(baseUrl);
  const started = performance.now();
  const timeoutMs = options.timeoutMs ?? 10_000;
  return new Promise((resolve, reject) => {
    const outgoing = request({
      host: url.hostname,
      port: url.port,
      method: options.method ?? 'POST',
      path: options.path,
      headers: headerList(url, options),
      agent: options.agent ?? false,
      timeout: timeoutMs,
    });
    outgoing.on('timeout', () => outgoing.destroy(new Error(`no response within ${timeoutMs} ms`)));
    outgoing.on('error', reject);
    outgoing.on('response', (response) => {
      const chunks: Buffer[] = [];
      response.on('data', (chunk: Buffer) => chunks.push(chunk));
      response.on('error', reject);
      response.on('end', () => {
        const text = Buffer.concat(chunks).toString('utf8');
        let body: Record<string, unknown> = {};
        try {
          body = JSON.parse(text) as Record<string, unknown>;
        } catch {
          // asserted on through `text`
        }
        if (options.withholdBody) outgoing.destroy();
        resolve({ status: response.statusCode ?? 0, headers: toHeaders(response.rawHeaders), body, text, elapsedMs: performance.now() - started });
      });
    });
    if (options.withholdBody) outgoing.flushHeaders();
    else outgoing.end(options.body);
  });
}

/** Decodes a chunked HTTP body (enough for the short answers of a test). */
function unchunk(raw: Buffer): Buffer {
  const parts: Buffer[] = [];
  let offset = 0;
  while (offset < raw.length) {
    const lineEnd = raw.indexOf('\r\n', offset);
    if (lineEnd < 0) break;
    const size = Number.parseInt(raw.subarray(offset, lineEnd).toString('latin1'), 16);
    if (!(size > 0)) break;
    parts.push(raw.subarray(lineEnd + 2, lineEnd + 2 + size));
    offset = lineEnd + 2 + size + 2;
  }
  return Buffer.concat(parts);
}

/**
 * Writes `bytes` as they are on a new connection (a request no HTTP client would produce: a malformed header, a
 * conflicting framing) and parses the first response that comes back before the server closes or `timeoutMs` passes.
 */
export function rawExchange(baseUrl: string, bytes: string | Buffer, timeoutMs = 5_000): Promise<HttpResult> {
  const url = new URL(baseUrl);
  return new Promise((resolve, reject) => {
    const socket = connect({ host: url.hostname, port: Number(url.port) }, () => socket.write(bytes));
    const chunks: Buffer[] = [];
    const timer = setTimeout(() => socket.destroy(), timeoutMs);
    socket.on('data', (chunk: Buffer) => chunks.push(chunk));
    socket.on('error', () => socket.destroy());
    socket.on('close', () => {
      clearTimeout(timer);
      const received = Buffer.concat(chunks);
      const headerEnd = received.indexOf('\r\n\r\n');
      if (headerEnd < 0) return reject(new Error(`no HTTP response: ${JSON.stringify(received.toString('latin1'))}`));
      const [statusLine = '', ...lines] = received.subarray(0, headerEnd).toString('latin1').split('\r\n');
      const headers = new Headers();
      for (const line of lines) {
        const colon = line.indexOf(':');
        if (colon > 0) headers.append(line.slice(0, colon).trim(), line.slice(colon + 1).trim());
      }
      let payload: Buffer = received.subarray(headerEnd + 4);
      if (headers.get('transfer-encoding')?.toLowerCase() === 'chunked') payload = unchunk(payload);
      else if (headers.has('content-length')) payload = payload.subarray(0, Number(headers.get('content-length')));
      const text = payload.toString('utf8');
      let body: Record<string, unknown> = {};
      try {
        body = JSON.parse(text) as Record<string, unknown>;
      } catch {
        // asserted on through `text`
      }
      resolve({ status: Number(statusLine.split(' ')[1] ?? 0), headers, body, text });
    });
  });
}
