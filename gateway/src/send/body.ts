// The request body: read under a hard size limit before any other check (check 1), judged as JSON only after the
// caller is known and counted (checks 7 and 8).
import type { IncomingMessage } from 'node:http';
import { ApiError } from '../errors/api-error.ts';
import { type MessageKey, text } from '../i18n/messages.ts';

/** 413; the unread rest of the body is not drained, so the connection is closed after the answer. */
export function payloadTooLarge(limit: number): ApiError {
  return new ApiError(413, 'payload_too_large', text('payload_too_large', { limit }), { headers: { Connection: 'close' } });
}

function parseError(reason: MessageKey, cause?: unknown): ApiError {
  return new ApiError(400, 'parse_error', text(reason), { cause });
}

/**
 * Reads the whole body, refusing it with 413 as soon as it is known to exceed `limit`: from Content-Length before a
 * byte is read, or while a chunked body streams in (reading then stops).
 */
export function readBody(request: IncomingMessage, limit: number): Promise<Buffer> {
  const declared = request.headers['content-length'];
  if (declared !== undefined && Number(declared) > limit) return Promise.reject(payloadTooLarge(limit));
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let received = 0;
    const stop = (): void => {
      request.off('data', onData).off('end', onEnd).off('error', onError).off('close', onClose);
    };
    const onData = (chunk: Buffer): void => {
      received += chunk.length;
      if (received > limit) {
        stop();
        request.pause();
        reject(payloadTooLarge(limit));
        return;
      }
      chunks.push(chunk);
    };
    const onEnd = (): void => {
      stop();
      resolve(Buffer.concat(chunks, received));
    };
    const onError = (error: Error): void => {
      stop();
      reject(parseError('parse.incomplete', error));
    };
    const onClose = (): void => {
      if (request.complete) return;
      stop();
      reject(parseError('parse.incomplete'));
    };
    request.on('data', onData).on('end', onEnd).on('error', onError).on('close', onClose);
  });
}

/** True for `application/json`, any case, with an optional UTF-8 charset (JSON is UTF-8 only, RFC 8259 §8.1). */
export function isJsonMediaType(header: string | undefined): boolean {
  if (!header) return false;
  const [type = '', ...parameters] = header.split(';');
  if (type.trim().toLowerCase() !== 'application/json') return false;
  return parameters.every((parameter) => {
    const [name = '', value = ''] = parameter.split('=', 2).map((part) => part.trim().toLowerCase());
    return name !== 'charset' || ['utf-8', 'utf8', '"utf-8"', '"utf8"'].includes(value);
  });
}

/** Check 7: 415 unless the body is declared as uncompressed JSON. */
export function ensureJsonBody(contentType: string | undefined, contentEncoding: string | undefined): void {
  if (contentEncoding && contentEncoding.trim().toLowerCase() !== 'identity') {
    throw new ApiError(415, 'unsupported_media_type', text('media_type.encoding'));
  }
  if (!isJsonMediaType(contentType)) throw new ApiError(415, 'unsupported_media_type', text('media_type.json'));
}

const utf8 = new TextDecoder('utf-8', { fatal: true });

/**
 * Check 8: strict UTF-8, well-formed JSON, an object. JSON.parse defines every key as an own property, so a
 * `__proto__` key stays data and never becomes a prototype; the result is only read, never merged into other objects.
 */
export function parseJsonObject(bytes: Uint8Array): Record<string, unknown> {
  let source: string;
  try {
    source = utf8.decode(bytes);
  } catch (error) {
    throw parseError('parse.utf8', error);
  }
  let value: unknown;
  try {
    value = JSON.parse(source);
  } catch (error) {
    throw parseError('parse.json', error);
  }
  if (value === null || typeof value !== 'object' || Array.isArray(value)) throw parseError('parse.object');
  return value as Record<string, unknown>;
}
