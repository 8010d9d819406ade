// The errors handlers throw; the error handler (error-handler.ts) is the only place that turns them into HTTP responses.
import type { Text } from '../i18n/messages.ts';

/** Stable snake_case codes of the contract; identical in every language. */
export type ErrorCode =
  | 'payload_too_large'
  | 'invalid_header'
  | 'permission_denied'
  | 'insufficient_scope'
  | 'from_domain_not_allowed'
  | 'api_key_not_found'
  | 'suppression_not_found'
  | 'domain_not_found'
  | 'domain_exists'
  | 'webhook_not_found'
  | 'webhook_limit_reached'
  | 'webhook_disabled'
  | 'template_exists'
  | 'template_version_not_found'
  | 'template_invalid'
  | 'precondition_failed'
  | 'precondition_required'
  | 'plan_blocked'
  | 'unsupported_media_type'
  | 'parse_error'
  | 'template_not_found'
  | 'message_not_found'
  | 'idempotency_key_in_use'
  | 'service_unavailable'
  | 'internal_error'
  | 'not_found'
  | 'method_not_allowed'
  | 'not_cancelable';

/**
 * Thrown when the gateway refuses a request with one `detail` text: rendered as `{detail, code}`, or `{detail}` alone
 * when `code` is undefined (401 and 429, whose bodies the seed fixes), plus `request_id` for 5xx.
 */
export class ApiError extends Error {
  override name = 'ApiError';
  readonly status: number;
  readonly code: ErrorCode | undefined;
  readonly detail: Text;
  /** Response headers that belong to this refusal (WWW-Authenticate, Retry-After, Allow...). */
  readonly headers: Readonly<Record<string, string>>;
  constructor(status: number, code: ErrorCode | undefined, detail: Text, options: { headers?: Record<string, string>; cause?: unknown } = {}) {
    super(`${status}${code ? ` ${code}` : ''}: ${detail.key}`, { cause: options.cause });
    this.status = status;
    this.code = code;
    this.detail = detail;
    this.headers = options.headers ?? {};
  }
}

/** A message for one field: a text to translate, or a dependency's own message passed on verbatim. */
export type FieldMessage = Text | string;

/** Thrown when fields of the request are refused: rendered as 422 `{field: [messages]}`, every field at once. */
export class FieldErrors extends Error {
  override name = 'FieldErrors';
  /** A Map, so that a field named `__proto__` is data and never a prototype. */
  readonly fields: ReadonlyMap<string, readonly FieldMessage[]>;
  constructor(fields: ReadonlyMap<string, readonly FieldMessage[]>, options: { cause?: unknown } = {}) {
    super(`422: ${[...fields.keys()].join(', ')}`, options);
    this.fields = fields;
  }

  static of(field: string, ...messages: FieldMessage[]): FieldErrors {
    return new FieldErrors(new Map([[field, messages]]));
  }
}
