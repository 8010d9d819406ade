// The pieces every operation of the OpenAPI document is built from (document.ts and the management routes' *-paths.ts):
// references, the error bodies, the headers every response carries, the statuses every read shares.
import type { ErrorCode } from '../errors/api-error.ts';
import { listLimits } from '../messages/read-query.ts';

export type Schema = Record<string, unknown>;

export const ref = (name: string): Schema => ({ $ref: `#/components/${name}` });

/** `{detail, code}` with the codes a status can carry. */
export function errorBody(codes: readonly ErrorCode[]): Schema {
  return {
    type: 'object',
    required: ['detail', 'code'],
    additionalProperties: false,
    properties: { detail: { type: 'string' }, code: { enum: [...codes] } },
  };
}

/** 5xx: `{detail, code, request_id}`. */
export function serverErrorBody(codes: readonly ErrorCode[]): Schema {
  return {
    type: 'object',
    required: ['detail', 'code', 'request_id'],
    additionalProperties: false,
    properties: {
      detail: { type: 'string' },
      code: { enum: [...codes] },
      request_id: { type: 'string', description: 'The X-Request-ID of the response; quote it to support.' },
    },
  };
}

export const json = (schema: Schema): Schema => ({ 'application/json': { schema } });

/** Headers on every response of the send endpoint. */
const commonHeaders = {
  'X-Request-ID': ref('headers/X-Request-ID'),
  'Cache-Control': ref('headers/Cache-Control'),
  'Content-Language': ref('headers/Content-Language'),
};
/** Headers on every response that counted against the rate limit (checks 2-5 passed). */
export const rateHeaders = { RateLimit: ref('headers/RateLimit'), 'RateLimit-Policy': ref('headers/RateLimit-Policy') };
/** The reads' own bucket (NOTIFY_PUBLIC_READ_RATE), on every read response counted against it. */
export const readRateHeaders = { RateLimit: ref('headers/ReadRateLimit'), 'RateLimit-Policy': ref('headers/ReadRateLimit-Policy') };

/** Request headers every operation reads besides Authorization. */
export const requestHeaders = [
  {
    name: 'X-Organization-ID',
    in: 'header',
    required: true,
    description: 'The organization, a positive integer.',
    schema: { type: 'string', pattern: '^[1-9][0-9]*$' },
  },
  {
    name: 'Accept-Language',
    in: 'header',
    required: false,
    description: 'English (default) or Spanish, q-values honoured.',
    schema: { type: 'string' },
    example: 'es;q=0.9,en;q=0.8',
  },
  {
    name: 'X-Request-ID',
    in: 'header',
    required: false,
    description: 'Echoed on the response when it is 1-128 of `A-Za-z0-9._-`; otherwise a new UUID is used.',
    schema: { type: 'string' },
  },
];

/** The statuses both read operations share: the send endpoint's checks 2-4, then the read bucket. */
export function readResponses(): Record<string, Schema> {
  return {
    '400': response('`X-Organization-ID` missing or malformed (invalid_header).', errorBody(['invalid_header'])),
    '401': response('Missing `Authorization`, another scheme, or an unknown or revoked key.', ref('schemas/Detail'), {
      'WWW-Authenticate': ref('headers/WWW-Authenticate'),
    }),
    '403': response(
      'The key may not act on this organization (permission_denied), or lacks the scope this operation needs (insufficient_scope; the detail names it).',
      errorBody(['permission_denied', 'insufficient_scope']),
    ),
    '429': response(
      'Over the per-key read rate (with the read rate-limit headers), or too many API keys refused for this client address (without them).',
      ref('schemas/Detail'),
      { ...readRateHeaders, 'Retry-After': ref('headers/Retry-After') },
    ),
    '500': response('An internal error; retry later, quoting request_id.', serverErrorBody(['internal_error'])),
    '503': response('A dependency is down; retry after Retry-After.', serverErrorBody(['service_unavailable']), { 'Retry-After': ref('headers/Retry-After') }),
  };
}

/** A keyset listing's `limit` and `cursor` query parameters. */
export function pageParameters(items: string, maxCursorLength: number): Schema[] {
  return [
    {
      name: 'limit',
      in: 'query',
      required: false,
      description: `${items} per page.`,
      schema: { type: 'integer', minimum: 1, maximum: listLimits.max, default: listLimits.default },
    },
    {
      name: 'cursor',
      in: 'query',
      required: false,
      description: '`next` of the previous page; opaque.',
      schema: { type: 'string', maxLength: maxCursorLength },
    },
  ];
}

/** The refusals of a management route that takes a JSON body: the reads' and the body's. */
export function managedWriteResponses(): Record<string, Schema> {
  return {
    ...readResponses(),
    '400': response('Malformed body (parse_error) or X-Organization-ID (invalid_header).', errorBody(['parse_error', 'invalid_header'])),
    '413': response('The body is larger than NOTIFY_MAX_BODY_BYTES.', errorBody(['payload_too_large'])),
    '415': response('The body is not declared as uncompressed JSON.', errorBody(['unsupported_media_type']), readRateHeaders),
  };
}

/** A response with the headers every response carries, and `headers` besides. */
export function response(description: string, schema: Schema, headers: Record<string, Schema> = {}): Schema {
  return { description, headers: { ...commonHeaders, ...headers }, content: json(schema) };
}
