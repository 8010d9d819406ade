// Check 9: the Idempotency-Key header, when present, is a UUID (any version, any case).
import validator from 'validator';
import { ApiError } from '../errors/api-error.ts';
import { text } from '../i18n/messages.ts';

/** The key in lower case (one key whatever case the caller used), undefined when absent; 400 `invalid_header` otherwise. */
export function parseIdempotencyKey(header: string | readonly string[] | undefined): string | undefined {
  if (header === undefined) return undefined;
  const value = typeof header === 'string' ? header : header.join(', ');
  if (!validator.isUUID(value, 'all')) throw new ApiError(400, 'invalid_header', text('idempotency_key.invalid'));
  return value.toLowerCase();
}
